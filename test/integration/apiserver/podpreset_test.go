package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	settingsv1alpha1 "github.com/portcullis-k8s/api/settings/v1alpha1"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// The example of the Kubernetes documentation's PodPreset page.
const allowDatabase = `
apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata:
  name: allow-database
spec:
  selector:
    matchLabels:
      role: frontend
  env:
    - name: DB_PORT
      value: "6379"
  volumeMounts:
    - mountPath: /cache
      name: cache-volume
  volumes:
    - name: cache-volume
      emptyDir: {}
`

var crdResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

func TestPodPreset(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	server := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/podpreset", "--enable-admission-plugins=PodPreset")
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(server.Config)
	warnings := &framework.WarningRecorder{}
	warned := rest.CopyConfig(server.Config)
	warned.WarningHandler = warnings
	client := kubernetes.NewForConfigOrDie(warned)

	// StartAPIServer returned as soon as /readyz first said ok, on a fresh etcd: from then on
	// the API is served and pods get their presets, with no waiting and no retry.
	var crd *unstructured.Unstructured
	t.Run("once /readyz says ok the CRD is established and the presets are listed", func(t *testing.T) {
		var err error
		crd, err = dyn.Resource(crdResource).Get(ctx, "podpresets.settings.k8s.io", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the CRD is not there when /readyz says ok: %v", err)
		}
		if !established(crd) {
			t.Errorf("the CRD is not established when /readyz says ok: %v", crd.Object["status"])
		}
		if approval := crd.GetAnnotations()["api-approved.kubernetes.io"]; !strings.HasPrefix(approval, "unapproved, ") {
			t.Errorf("api-approved.kubernetes.io = %q", approval)
		}
		readyz, err := server.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
		if err != nil || !strings.Contains(string(readyz), "[+]podpreset-presets-synced ok") {
			t.Errorf("/readyz does not include the PodPreset check (%v):\n%s", err, readyz)
		}
	})
	if crd == nil {
		t.FailNow()
	}

	ns := namespace(t, server.Client)
	presets := dyn.Resource(settingsv1alpha1.Resource).Namespace(ns)

	var applied *unstructured.Unstructured
	t.Run("the documentation's example applies as YAML", func(t *testing.T) {
		obj := fromYAML(t, allowDatabase)
		var err error
		applied, err = presets.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "kubectl"})
		if err != nil {
			t.Fatalf("applying the example: %v", err)
		}
		list, err := presets.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("kubectl get podpresets: %v, %d items", err, len(list.Items))
		}
	})
	if applied == nil {
		t.FailNow()
	}
	waitForPreset(t, client, ns, "allow-database")
	warnings.Take()

	t.Run("a matching pod gets env, mount, volume and annotation", func(t *testing.T) {
		pod := frontendPod("website", nil)
		created, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := created.Spec.Containers[0]
		if !hasEnv(c, "DB_PORT", "6379") {
			t.Errorf("env: %+v", c.Env)
		}
		if !hasMount(c, "cache-volume", "/cache") {
			t.Errorf("volumeMounts: %+v", c.VolumeMounts)
		}
		if !hasEmptyDir(created, "cache-volume") {
			t.Errorf("volumes: %+v", created.Spec.Volumes)
		}
		if got, want := created.Annotations["podpreset.admission.kubernetes.io/podpreset-allow-database"], applied.GetResourceVersion(); got != want {
			t.Errorf("annotation = %q, want the preset's resourceVersion %q", got, want)
		}
	})

	t.Run("a non-matching pod is untouched", func(t *testing.T) {
		pod := frontendPod("backend", func(p *corev1.Pod) { p.Labels = map[string]string{"role": "backend"} })
		created, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		assertUntouched(t, created)
	})

	t.Run("an excluded pod is untouched", func(t *testing.T) {
		pod := frontendPod("excluded", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"podpreset.admission.kubernetes.io/exclude": "true"}
		})
		created, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		assertUntouched(t, created)
	})

	t.Run("a conflicting pod is admitted unchanged with a warning and an event", func(t *testing.T) {
		warnings.Take()
		pod := frontendPod("conflicting", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PORT", Value: "5432"}}
		})
		created, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a conflict must not reject the pod: %v", err)
		}
		assertUntouched(t, created)
		if !hasEnv(created.Spec.Containers[0], "DB_PORT", "5432") || len(created.Spec.Containers[0].Env) != 1 {
			t.Errorf("the pod's own env changed: %+v", created.Spec.Containers[0].Env)
		}
		got := strings.Join(warnings.Take(), "\n")
		for _, want := range []string{"allow-database", `env var "DB_PORT"`} {
			if !strings.Contains(got, want) {
				t.Errorf("warnings %q do not mention %q", got, want)
			}
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=PodPresetConflict"})
			if err != nil {
				return false, nil
			}
			for _, e := range events.Items {
				if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "allow-database" && strings.Contains(e.Message, "conflicting") {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Errorf("no PodPresetConflict Warning event in %s: %v", ns, err)
		}
	})

	t.Run("behind a mutating webhook that labels pods, a controller's pod gets the preset once, a conflict is reported once", func(t *testing.T) {
		webhook := installLabeller(t, server.Client, "", "v1", "pods")
		webhook.waitCalled(t, func(ctx context.Context) error {
			_, err := server.Client.CoreV1().Pods(ns).Create(ctx, frontendPod("probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
		asController := asPodCreator(t, server, server.Client, ns, "replicaset-controller")

		created, err := asController.CoreV1().Pods(ns).Create(ctx, frontendPod("behind-webhook", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create as a controller behind the webhook: %v", err)
		}
		c := created.Spec.Containers[0]
		cacheMounts := slices.DeleteFunc(slices.Clone(c.VolumeMounts), func(m corev1.VolumeMount) bool { return m.Name != "cache-volume" })
		cacheVolumes := slices.DeleteFunc(slices.Clone(created.Spec.Volumes), func(v corev1.Volume) bool { return v.Name != "cache-volume" })
		if created.Labels[labellerLabel] != "true" || !hasEnv(c, "DB_PORT", "6379") || len(c.Env) != 1 || len(cacheMounts) != 1 || len(cacheVolumes) != 1 {
			t.Errorf("want the webhook's label and the preset once: labels %v, env %+v, mounts %+v, volumes %+v", created.Labels, c.Env, c.VolumeMounts, created.Spec.Volumes)
		}

		conflicting := frontendPod("conflicting-behind-webhook", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PORT", Value: "5432"}}
		})
		if _, err := asController.CoreV1().Pods(ns).Create(ctx, conflicting, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A later conflict's event: the server records events in order, so once it is
		// there, a second event of the first conflict would be too.
		later := conflicting.DeepCopy()
		later.Name = "later-conflict"
		if _, err := asController.CoreV1().Pods(ns).Create(ctx, later, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var events []corev1.Event
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=PodPresetConflict"})
			if err != nil {
				return false, nil
			}
			events = list.Items
			return slices.ContainsFunc(events, func(e corev1.Event) bool { return strings.Contains(e.Message, "pod later-conflict ") }), nil
		})
		if err != nil {
			t.Fatalf("no event of the later conflict: %v", err)
		}
		for _, e := range events {
			if strings.Contains(e.Message, "pod conflicting-behind-webhook ") && e.Count != 1 {
				t.Errorf("the conflict was recorded %d times, want once: %s", e.Count, e.Message)
			}
		}
	})

	t.Run("invalid presets are refused naming the field", func(t *testing.T) {
		for name, tc := range map[string]struct{ spec, want string }{
			"nothing to inject":     {"selector: {}", "at least one of env, envFrom, volumes or volumeMounts must be set"},
			"bad selector operator": {"selector: {matchExpressions: [{key: tier, operator: Near, values: [a]}]}\nenv: [{name: A, value: b}]", "spec.selector.matchExpressions[0].operator"},
			"bad selector key":      {"selector: {matchLabels: {'not a key!': a}}\nenv: [{name: A, value: b}]", "spec.selector.matchLabels"},
			"two volume sources":    {"volumes: [{name: v, emptyDir: {}, hostPath: {path: /tmp}}]", "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"},
			"envFrom of two kinds":  {"envFrom: [{configMapRef: {name: a}, secretRef: {name: b}}]", "spec.envFrom: Invalid value"},
			"subPath out of volume": {"volumes: [{name: v, emptyDir: {}}]\nvolumeMounts: [{name: v, mountPath: /m, subPath: ../etc}]", "subPath: Invalid value: \"../etc\": must not contain '..'"},
			"mount of no volume":    {"selector: {}\nvolumeMounts: [{name: missing, mountPath: /m}]", "spec.volumeMounts: Invalid value"},
			"duplicate mount paths": {"selector: {}\nvolumes: [{name: v, emptyDir: {}}]\nvolumeMounts: [{name: v, mountPath: /m}, {name: v, mountPath: /m}]", "Duplicate value"},
			"bad volume name":       {"selector: {}\nvolumes: [{name: Not_Valid, emptyDir: {}}]", "spec.volumes[0].name"},
		} {
			t.Run(name, func(t *testing.T) {
				doc := fmt.Sprintf("apiVersion: settings.k8s.io/v1alpha1\nkind: PodPreset\nmetadata: {name: bad}\nspec:\n  %s\n", strings.ReplaceAll(tc.spec, "\n", "\n  "))
				_, err := presets.Create(ctx, fromYAML(t, doc), metav1.CreateOptions{})
				if !apierrors.IsInvalid(err) {
					t.Fatalf("want 422 Invalid, got %v", err)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %q does not say %q", err.Error(), tc.want)
				}
			})
		}
	})

	t.Run("a name too long for the pod annotation is refused", func(t *testing.T) {
		long := strings.Repeat("n", 54)
		doc := fmt.Sprintf("apiVersion: settings.k8s.io/v1alpha1\nkind: PodPreset\nmetadata: {name: %s}\nspec: {env: [{name: A, value: b}]}\n", long)
		_, err := presets.Create(ctx, fromYAML(t, doc), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.name") || !strings.Contains(err.Error(), "no more than 53 characters") {
			t.Fatalf("want 422 naming metadata.name and the 53-character limit, got %v", err)
		}
	})

	t.Run("a preset without a selector applies to every pod of its namespace", func(t *testing.T) {
		everyone := namespace(t, server.Client)
		doc := "apiVersion: settings.k8s.io/v1alpha1\nkind: PodPreset\nmetadata: {name: everyone}\nspec:\n  env: [{name: CLUSTER, value: prod}]\n"
		if _, err := dyn.Resource(settingsv1alpha1.Resource).Namespace(everyone).Create(ctx, fromYAML(t, doc), metav1.CreateOptions{}); err != nil {
			t.Fatalf("a manifest without a selector must apply unchanged: %v", err)
		}
		waitForPreset(t, client, everyone, "everyone")
		pod := frontendPod("unlabelled", func(p *corev1.Pod) { p.Labels = map[string]string{"anything": "else"} })
		created, err := client.CoreV1().Pods(everyone).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !hasEnv(created.Spec.Containers[0], "CLUSTER", "prod") {
			t.Errorf("the selector-less preset did not apply: %+v", created.Spec.Containers[0].Env)
		}
	})

	t.Run("a dry-run conflict warns the client and records no event", func(t *testing.T) {
		conflicting := func(name string) *corev1.Pod {
			return frontendPod(name, func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PORT", Value: "5432"}} })
		}
		warnings.Take()
		if _, err := client.CoreV1().Pods(ns).Create(ctx, conflicting("dry-conflict"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(warnings.Take(), "\n"); !strings.Contains(got, "dry-conflict") {
			t.Errorf("the dry run's client got no conflict warning: %q", got)
		}
		// Events are recorded in order: once the real request's event is there, the dry
		// run's would be too.
		if _, err := client.CoreV1().Pods(ns).Create(ctx, conflicting("real-conflict"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var events *corev1.EventList
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var err error
			events, err = client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=PodPresetConflict"})
			if err != nil {
				return false, nil
			}
			for _, e := range events.Items {
				if strings.Contains(e.Message, "real-conflict") {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("no event for the real conflict: %v", err)
		}
		for _, e := range events.Items {
			if strings.Contains(e.Message, "dry-conflict") {
				t.Errorf("the dry run recorded an event: %s", e.Message)
			}
		}
	})

	t.Run("kubectl explain finds the schema", func(t *testing.T) {
		doc, err := server.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/settings.k8s.io/v1alpha1").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"PodPresetSpec is what a PodPreset injects", "VolumeMounts are appended"} {
			if !strings.Contains(string(doc), want) {
				t.Errorf("OpenAPI v3 document lacks %q", want)
			}
		}
	})

	t.Run("a server brings a CRD of an older schema up to date", func(t *testing.T) {
		current := crd.GetAnnotations()["settings.portcullis.io/schema-hash"]
		stale, err := dyn.Resource(crdResource).Get(ctx, "podpresets.settings.k8s.io", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// As an earlier release wrote it: another schema, no schema version.
		annotations := stale.GetAnnotations()
		annotations["settings.portcullis.io/schema-hash"] = "older-schema"
		delete(annotations, "settings.portcullis.io/schema-version")
		stale.SetAnnotations(annotations)
		if _, err := dyn.Resource(crdResource).Update(ctx, stale, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		restarted := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/podpreset", "--enable-admission-plugins=PodPreset")
		// At its first /readyz ok the restarted server has listed the presets: a matching
		// pod gets them at once, never a not-ready refusal.
		pod, err := restarted.Client.CoreV1().Pods(ns).Create(ctx, frontendPod("at-readyz", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a pod created as soon as /readyz said ok: %v", err)
		}
		if _, ok := pod.Annotations["podpreset.admission.kubernetes.io/podpreset-allow-database"]; !ok || !hasEnv(pod.Spec.Containers[0], "DB_PORT", "6379") {
			t.Errorf("a pod created as soon as /readyz said ok did not get its preset: %+v", pod)
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := dyn.Resource(crdResource).Get(ctx, "podpresets.settings.k8s.io", metav1.GetOptions{})
			return err == nil && got.GetAnnotations()["settings.portcullis.io/schema-hash"] == current, nil
		})
		if err != nil {
			t.Fatalf("the restarted server did not rewrite the stale CRD: %v", err)
		}
		if _, err := presets.Get(ctx, "allow-database", metav1.GetOptions{}); err != nil {
			t.Errorf("the update lost a preset: %v", err)
		}
	})

	t.Run("a deleted CRD is recreated within 30 s", func(t *testing.T) {
		old, err := dyn.Resource(crdResource).Get(ctx, "podpresets.settings.k8s.io", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := dyn.Resource(crdResource).Delete(ctx, "podpresets.settings.k8s.io", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			crd, err := dyn.Resource(crdResource).Get(ctx, "podpresets.settings.k8s.io", metav1.GetOptions{})
			return err == nil && crd.GetUID() != old.GetUID() && established(crd), nil
		})
		if err != nil {
			t.Fatalf("the CRD was not recreated and established within 30 s: %v", err)
		}
	})
}

func established(crd *unstructured.Unstructured) bool { return conditionTrue(crd, "Established") }

// conditionTrue reports whether the object's status has the condition, with status True.
func conditionTrue(obj *unstructured.Unstructured, conditionType string) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		c, _ := c.(map[string]any)
		if c["type"] == conditionType && c["status"] == "True" {
			return true
		}
	}
	return false
}

// waitForPreset waits until the plugin's informer has the preset: a server-side dry run
// runs admission without storing anything. Once the server is ready, no probe may be refused.
func waitForPreset(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe, err := client.CoreV1().Pods(ns).Create(ctx, frontendPod("probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, fmt.Errorf("a ready server refused a pod: %w", err)
		}
		_, ok := probe.Annotations["podpreset.admission.kubernetes.io/podpreset-"+name]
		return ok, nil
	})
	if err != nil {
		t.Fatalf("the plugin never applied podpreset %s: %v", name, err)
	}
}

func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func frontendPod(name string, mutate func(*corev1.Pod)) *corev1.Pod {
	pod := podWith(mutate)
	pod.Name = name
	if pod.Labels == nil {
		pod.Labels = map[string]string{"role": "frontend"}
	}
	return pod
}

func hasEnv(c corev1.Container, name, value string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.Value == value {
			return true
		}
	}
	return false
}

func hasMount(c corev1.Container, name, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == name && m.MountPath == path {
			return true
		}
	}
	return false
}

func hasEmptyDir(pod *corev1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name && v.EmptyDir != nil {
			return true
		}
	}
	return false
}

func assertUntouched(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	for key := range pod.Annotations {
		if strings.HasPrefix(key, "podpreset.admission.kubernetes.io/podpreset-") {
			t.Errorf("pod %s got preset annotation %s", pod.Name, key)
		}
	}
	if hasEmptyDir(pod, "cache-volume") || hasMount(pod.Spec.Containers[0], "cache-volume", "/cache") || hasEnv(pod.Spec.Containers[0], "DB_PORT", "6379") {
		t.Errorf("pod %s was given the preset's content: %+v", pod.Name, pod.Spec)
	}
}
