// Package upgrade proves the upgrade path across Kubernetes minors with Portcullis: one etcd,
// Portcullis of each supported minor in turn, oldest first, one minor at a time as
// `kubeadm upgrade` goes, and at each step a rollback to that minor's stock.
package upgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-k8s/portcullis/build/deploy/podsecuritypolicy"
	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initializers"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/podpreset"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

const (
	prefix    = "/upgrade"
	namespace = "upgrade"
	// alsoEnabled join the deploy kit's plugins at every step: the PodSecurityPolicy plugin,
	// which the kit's policies and grants are for (operating.md enables it once they are
	// applied), and Initializers. Stock's flags are the same less every plugin of ours.
	alsoEnabled = "PodSecurityPolicy,Initializers"
	// deployAdmissionConfig is the deploy kit's admission configuration file, and
	// deployKubeadmConfig the kubeadm configuration whose extraArgs name its plugins.
	deployAdmissionConfig = "build/deploy/static-pod/admission-config.yaml"
	deployKubeadmConfig   = "build/deploy/static-pod/kubeadm-config.yaml"
	// developer creates the pods and DaemonSets, as a user who is neither an administrator nor
	// a node: the kit's grants give such a user the baseline policy.
	developer = "upgrade-developer"
)

var (
	pspResource    = schema.GroupVersionResource{Group: "policy", Version: "v1beta1", Resource: "podsecuritypolicies"}
	presetResource = schema.GroupVersionResource{Group: "settings.k8s.io", Version: "v1alpha1", Resource: "podpresets"}
	initResource   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Resource: "initializerconfigurations"}
	crdResource    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// ourObject is an object of ours created under the oldest minor, with the version its
// resource is stored in at every minor.
type ourObject struct {
	resource   schema.GroupVersionResource
	namespaced bool
	manifest   string
	storedAs   string
}

// client is the object's resource in dyn.
func (o ourObject) client(dyn dynamic.Interface) dynamic.ResourceInterface {
	if o.namespaced {
		return dyn.Resource(o.resource).Namespace(namespace)
	}
	return dyn.Resource(o.resource)
}

// createdObject is an object of ours as the oldest minor's server created it.
type createdObject struct {
	ourObject
	obj *unstructured.Unstructured
}

// ours are the objects of ours the test writes; the deploy kit's PodSecurityPolicies join them
// (kitObjects).
var ours = []ourObject{
	{presetResource, true, `apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata:
  name: upgrade-database
spec:
  selector:
    matchLabels: {role: frontend}
  env:
  - {name: DB_PORT, value: "6379"}
  volumes:
  - name: cache
    emptyDir: {}
  volumeMounts:
  - {name: cache, mountPath: /cache}
`, "settings.k8s.io/v1alpha1"},
	// Its rule names DaemonSets, which only checkEnforced creates (no controller acts on them).
	{initResource, false, `apiVersion: admissionregistration.k8s.io/v1alpha1
kind: InitializerConfiguration
metadata:
  name: upgrade-daemonsets
initializers:
- name: daemonsets.upgrade.example.com
  rules:
  - apiGroups: [apps]
    apiVersions: [v1]
    resources: [daemonsets]
`, "admissionregistration.k8s.io/v1alpha1"},
}

// TestUpgradeAcrossMinors applies the deploy kit's PodSecurityPolicies and grants, and creates a
// PodPreset with a variable and a volume, an InitializerConfiguration and workloads, under
// Portcullis of the oldest supported minor running the kit's plugins (its kubeadm
// configuration's, with PodSecurityPolicy and Initializers) and its admission configuration;
// pods are a developer's, whom the kit's grants give the baseline policy. It then upgrades as
// kubeadm does, one minor at a time: etcd first (each minor's etcd, the version its kubeadm deploys, on the same
// data), then the API server, on the same PKI. After each step every object is read back
// unchanged, the policy and the preset are enforced on new pods, each of our resources is
// stored in the version the minor expects (and the PodPreset CRD carries the minor's schema),
// and that minor's stock kube-apiserver starts on the same etcd and the same admission
// configuration file (the rollback). Each step past the first also takes the two detours an
// upgrade has: the previous minor's server runs beside the new one on the same etcd (an HA
// control plane upgraded node by node, for minutes; here through three of the PodPreset
// installer's periodic checks), and it must leave the new minor's CRD as it is, and then
// the new minor's stock server joins them: its start deletes the APIServices of ours, which
// the servers of ours put back, and every discovery path of each lists our resources; and
// when the new server fails to come up, kubeadm puts the previous manifest back, not
// etcd, so the previous minor's Portcullis must start again on the newer etcd and the data the
// newer server wrote.
func TestUpgradeAcrossMinors(t *testing.T) {
	root := framework.RepoRoot(t)
	minors := framework.SupportedMinors(t)
	if len(minors) < 2 {
		t.Fatalf("releases/minors lists %v: no upgrade to prove", minors)
	}
	// The newest minor's binaries are where make puts the default build's (PORTCULLIS_BIN_DIR),
	// the others' under _output/<minor>.
	bins := make(map[string]framework.Binaries, len(minors))
	for i, minor := range minors {
		if i == len(minors)-1 {
			bins[minor] = framework.FindBinaries(t)
			continue
		}
		bins[minor] = framework.BinariesIn(t, filepath.Join(root, "_output", minor, "bin"))
	}
	etcd := framework.StartEtcd(t, bins[minors[0]].Etcd)
	files := framework.WritePKI(t, t.TempDir())
	// Every server, ours and stock, reads the deploy kit's admission configuration, as on a
	// node: the rollback is stock started on the files written for Portcullis.
	admissionConfig := "--admission-control-config-file=" + filepath.Join(root, deployAdmissionConfig)
	plugins := append(kitPlugins(t, root), strings.Split(alsoEnabled, ",")...)
	stockPlugins := slices.DeleteFunc(slices.Clone(plugins), portcullisadmission.IsOurs)
	flags := []string{"--etcd-prefix=" + prefix, admissionConfig, "--enable-admission-plugins=" + strings.Join(plugins, ",")}
	stockFlags := []string{"--etcd-prefix=" + prefix, admissionConfig, "--enable-admission-plugins=" + strings.Join(stockPlugins, ",")}
	ctx := context.Background()

	var created []createdObject
	var deployment *appsv1.Deployment
	// checkObjects reads every object back, unchanged, through server.
	checkObjects := func(t *testing.T, server *framework.APIServer, dyn dynamic.Interface) {
		t.Helper()
		for _, c := range created {
			want := c.obj
			got, err := c.client(dyn).Get(ctx, want.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Errorf("reading %s %s: %v", want.GetKind(), want.GetName(), err)
				continue
			}
			if !sameContent(want, got) {
				t.Errorf("%s %s changed:\nwas %v\nnow %v", want.GetKind(), want.GetName(), want.Object, got.Object)
			}
		}
		got, err := server.Client.AppsV1().Deployments(namespace).Get(ctx, deployment.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("reading the Deployment: %v", err)
		} else if got.UID != deployment.UID || !apiequality.Semantic.DeepEqual(got.Spec, deployment.Spec) {
			t.Errorf("the Deployment changed: %+v", got)
		}
		if _, err := server.Client.CoreV1().Pods(namespace).Get(ctx, "frontend-"+minors[0], metav1.GetOptions{}); err != nil {
			t.Errorf("the pod created under %s: %v", minors[0], err)
		}
	}
	for i, minor := range minors {
		t.Run("Portcullis "+minor, func(t *testing.T) {
			if i > 0 {
				etcd.Replace(t, bins[minor].Etcd)
			}
			t.Run("etcd is the version kubeadm "+minor+" deploys", func(t *testing.T) {
				if got, want := etcdServerVersion(t, etcd), kubeadmEtcdVersion(t, bins[minor].Kubeadm); got != want {
					t.Errorf("%s runs etcd %s, want %s (what %s deploys; releases/%s/etcd builds it)", etcd.Binary, got, want, bins[minor].Kubeadm, minor)
				}
			})
			server := framework.StartAPIServerWithPKI(t, bins[minor].APIServer, etcd, files, flags...)
			if got := serverMinor(t, server); got != minor {
				t.Fatalf("%s serves Kubernetes %s, want %s", bins[minor].APIServer, got, minor)
			}
			dyn := dynamic.NewForConfigOrDie(server.Config)
			if i == 0 {
				created, deployment = createObjects(t, server, dyn)
				checkEnforced(t, server, minor)
			}
			t.Run("every object as it was", func(t *testing.T) {
				checkObjects(t, server, dyn)
			})
			if i > 0 {
				t.Run("the policy and the preset are enforced", func(t *testing.T) {
					checkEnforced(t, server, minor)
				})
			}
			t.Run("each resource of ours stored in its version", func(t *testing.T) {
				// An update writes the object again, with this minor's encoding.
				for _, c := range created {
					obj := c.obj
					current, err := c.client(dyn).Get(ctx, obj.GetName(), metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					labels := current.GetLabels()
					if labels == nil {
						labels = map[string]string{}
					}
					labels[upgradedLabel] = minor
					current.SetLabels(labels)
					if _, err := c.client(dyn).Update(ctx, current, metav1.UpdateOptions{}); err != nil {
						t.Errorf("updating %s %s: %v", obj.GetKind(), obj.GetName(), err)
					}
				}
				for _, c := range created {
					if got := storedAPIVersion(t, etcd, c.obj.GetName()); got != c.storedAs {
						t.Errorf("%s %s is stored as %s, want %s", c.obj.GetKind(), c.obj.GetName(), got, c.storedAs)
					}
				}
				// The plugin writes the CRD as the server starts, in the background.
				var holds string
				err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
					crd, err := dyn.Resource(crdResource).Get(ctx, "podpresets.settings.k8s.io", metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					holds = crd.GetAnnotations()["settings.portcullis.io/schema-kubernetes-minor"]
					return holds == minor, nil
				})
				if err != nil {
					t.Errorf("the PodPreset CRD holds the schema of Kubernetes %q, want %s's: %v", holds, minor, err)
				}
			})
			if i > 0 {
				previous := minors[i-1]
				t.Run("Portcullis "+previous+" beside it on one etcd, then stock "+minor+" beside both", func(t *testing.T) {
					before, err := dyn.Resource(crdResource).Get(ctx, "podpresets.settings.k8s.io", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					// Ready means its PodPreset plugin has installed or left the CRD and sees it
					// established (the plugin's readiness check).
					older := framework.StartAPIServerWithPKI(t, bins[previous].APIServer, etcd, files, flags...)
					defer older.Stop(t)
					// Then both check the CRD every CRDCheckInterval: through three of those
					// rounds, no rewrite may come (a watch from the version before the older
					// server started sees any).
					watcher, err := dyn.Resource(crdResource).Watch(ctx, metav1.ListOptions{
						FieldSelector:   "metadata.name=podpresets.settings.k8s.io",
						ResourceVersion: before.GetResourceVersion(),
					})
					if err != nil {
						t.Fatal(err)
					}
					window := time.NewTimer(3 * podpreset.CRDCheckInterval)
					defer window.Stop()
				observe:
					for {
						select {
						case ev, ok := <-watcher.ResultChan():
							if !ok {
								t.Fatal("the watch of the PodPreset CRD ended early")
							}
							crd, isCRD := ev.Object.(*unstructured.Unstructured)
							if !isCRD || ev.Type == watch.Error {
								t.Fatalf("the watch of the PodPreset CRD failed: %v", ev.Object)
							}
							// The apiextensions controllers of either server may write its
							// status; the plugin writes its spec and schema annotations.
							if apiequality.Semantic.DeepEqual(crd.Object["spec"], before.Object["spec"]) &&
								maps.Equal(crd.GetAnnotations(), before.GetAnnotations()) {
								continue
							}
							t.Errorf("with Portcullis %s beside %s, the PodPreset CRD was rewritten (%s): schema of Kubernetes %q",
								previous, minor, ev.Type, crd.GetAnnotations()["settings.portcullis.io/schema-kubernetes-minor"])
							break observe
						case <-window.C:
							break observe
						}
					}
					watcher.Stop()
					checkObjects(t, older, dynamic.NewForConfigOrDie(older.Config))
					checkEnforced(t, older, previous+"-beside-"+minor)

					// A stock server of the new minor joins (an upgrade that swaps in stock
					// first, or a rollback half done): its start deletes the APIServices of
					// ours; the servers of ours, of both minors, recreate them, and every
					// discovery path of each lists our resources again.
					waitForStockStart := framework.WatchAPIServicesThroughStockStart(t, older.Config, true)
					stock := framework.StartAPIServerWithPKI(t, bins[minor].StockAPIServer, etcd, files, stockFlags...)
					defer stock.Stop(t)
					waitForStockStart("stock " + minor)
					framework.CheckOursDiscoverable(t, older.Config, true)
					framework.CheckOursDiscoverable(t, server.Config, true)
				})
			}
			server.Stop(t)

			if i > 0 {
				previous := minors[i-1]
				t.Run("a failed upgrade: Portcullis "+previous+" again on etcd of "+minor, func(t *testing.T) {
					again := framework.StartAPIServerWithPKI(t, bins[previous].APIServer, etcd, files, flags...)
					if got := serverMinor(t, again); got != previous {
						t.Fatalf("%s serves Kubernetes %s, want %s", bins[previous].APIServer, got, previous)
					}
					checkObjects(t, again, dynamic.NewForConfigOrDie(again.Config))
					checkEnforced(t, again, previous+"-again-"+minor)
					again.Stop(t)
				})
			}

			t.Run("rollback: stock "+minor+" starts on the same etcd", func(t *testing.T) {
				stock := framework.StartAPIServerWithPKI(t, bins[minor].StockAPIServer, etcd, files, stockFlags...)
				if got := serverMinor(t, stock); got != minor {
					t.Errorf("stock serves Kubernetes %s, want %s", got, minor)
				}
				if _, err := stock.Client.AppsV1().Deployments(namespace).Get(ctx, deployment.Name, metav1.GetOptions{}); err != nil {
					t.Errorf("stock cannot read the Deployment: %v", err)
				}
				stock.Stop(t)
			})
		})
		if t.Failed() {
			return
		}
	}
}

// etcdServerVersion is the version etcd reports (GET /version's etcdserver).
func etcdServerVersion(t *testing.T, etcd *framework.Etcd) string {
	t.Helper()
	resp, err := http.Get(etcd.ClientURL + "/version")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Server string `json:"etcdserver"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("etcd's /version: %v", err)
	}
	return v.Server
}

// kubeadmEtcdVersion is the etcd server version that minor's kubeadm deploys, as its CLI
// lists the images of its own Kubernetes release ("registry.k8s.io/etcd:3.6.6-0").
func kubeadmEtcdVersion(t *testing.T, kubeadm string) string {
	t.Helper()
	release, err := exec.Command(kubeadm, "version", "-o", "short").Output()
	if err != nil {
		t.Fatalf("%s version: %v", kubeadm, err)
	}
	out, err := exec.Command(kubeadm, "config", "images", "list", "--kubernetes-version", strings.TrimSpace(string(release))).CombinedOutput()
	if err != nil {
		t.Fatalf("%s config images list: %v: %s", kubeadm, err, out)
	}
	for _, image := range strings.Fields(string(out)) {
		if _, tag, ok := strings.Cut(image, "/etcd:"); ok {
			version, _, _ := strings.Cut(tag, "-")
			return version
		}
	}
	t.Fatalf("%s config images list names no etcd image: %s", kubeadm, out)
	return ""
}

// serverMinor is the Kubernetes minor a server reports (major.minor of GET /version).
func serverMinor(t *testing.T, s *framework.APIServer) string {
	t.Helper()
	v, err := s.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v.Major + "." + strings.TrimSuffix(v.Minor, "+")
}

func createObjects(t *testing.T, server *framework.APIServer, dyn dynamic.Interface) ([]createdObject, *appsv1.Deployment) {
	t.Helper()
	ctx := context.Background()
	if _, err := server.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller manager runs: the pods' service account is created here.
	if _, err := server.Client.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var created []createdObject
	kit, policies := kitObjects(t)
	for _, obj := range kit {
		resource, namespaced := kitResource(t, obj)
		client := dynamic.ResourceInterface(dyn.Resource(resource))
		if namespaced {
			client = dyn.Resource(resource).Namespace(obj.GetNamespace())
		}
		if _, err := client.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the deploy kit's %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	grantDeveloper(t, server)
	for _, o := range append(policies, ours...) {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(o.manifest), &obj.Object); err != nil {
			t.Fatal(err)
		}
		if o.namespaced {
			obj.SetNamespace(namespace)
		}
		var out *unstructured.Unstructured
		// The PodPreset's CRD is installed by the plugin as the server starts.
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var err error
			out, err = o.client(dyn).Create(ctx, obj, metav1.CreateOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		created = append(created, createdObject{ourObject: o, obj: out})
	}
	replicas := int32(2)
	deployment, err := server.Client.AppsV1().Deployments(namespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "frontend"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "frontend"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"role": "frontend"}}, Spec: podSpec(false)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitEnforcing(t, server)
	return created, deployment
}

// waitEnforcing waits until the plugins' caches hold what was just created: a dry run of the
// developer's pod is admitted under the baseline policy with the preset applied, and one of a
// DaemonSet is pending the initializer.
func waitEnforcing(t *testing.T, server *framework.APIServer) {
	t.Helper()
	client := asDeveloper(server)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "dry-run", Labels: map[string]string{"role": "frontend"}},
			Spec:       podSpec(false),
		}, dryRun)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		if pod.Annotations["kubernetes.io/psp"] != "baseline" || len(pod.Spec.Volumes) == 0 {
			last = fmt.Sprintf("policy %q, volumes %v", pod.Annotations["kubernetes.io/psp"], pod.Spec.Volumes)
			return false, nil
		}
		labels := map[string]string{"app": "dry-run"}
		ds, err := client.AppsV1().DaemonSets(namespace).Create(ctx, &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "dry-run"},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(false)},
			},
		}, dryRun)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = "the DaemonSet is pending " + ds.Annotations[initializers.PendingAnnotation]
		return ds.Annotations[initializers.PendingAnnotation] != "", nil
	})
	if err != nil {
		t.Fatalf("the plugins do not enforce what was created: %s: %v", last, err)
	}
}

// upgradedLabel is the label each step's update sets on our objects.
const upgradedLabel = "upgraded-to"

// sameContent compares what the user wrote: everything but metadata the server maintains
// and the label the test adds.
func sameContent(want, got *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		for _, field := range []string{"resourceVersion", "managedFields", "generation"} {
			unstructured.RemoveNestedField(c.Object, "metadata", field)
		}
		unstructured.RemoveNestedField(c.Object, "metadata", "labels", upgradedLabel)
		if labels, found, _ := unstructured.NestedMap(c.Object, "metadata", "labels"); found && len(labels) == 0 {
			unstructured.RemoveNestedField(c.Object, "metadata", "labels")
		}
		return c.Object
	}
	a, _ := json.Marshal(strip(want))
	b, _ := json.Marshal(strip(got))
	return string(a) == string(b)
}

func podSpec(privileged bool) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "registry.k8s.io/pause:3.10",
		SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
	}}}
}

// checkEnforced creates, as the developer, a pod the kit's baseline policy allows, which must
// carry the preset's variable and volume and the policy's annotation, a privileged one, which
// the policy must refuse, and a DaemonSet, which must be recorded as pending the configured
// initializer. name tells the step's objects apart.
func checkEnforced(t *testing.T, server *framework.APIServer, name string) {
	t.Helper()
	ctx := context.Background()
	client := asDeveloper(server)
	pods := client.CoreV1().Pods(namespace)
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "frontend-" + name, Labels: map[string]string{"role": "frontend"}},
		Spec:       podSpec(false),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a pod the policy allows: %v", err)
	}
	if got := pod.Annotations["kubernetes.io/psp"]; got != "baseline" {
		t.Errorf("the pod was admitted under policy %q, want the kit's baseline", got)
	}
	if !slices.ContainsFunc(pod.Spec.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == "DB_PORT" && e.Value == "6379" }) {
		t.Errorf("the preset's variable was not applied: %v", pod.Spec.Containers[0].Env)
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "cache" && v.EmptyDir != nil }) ||
		!slices.ContainsFunc(pod.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "cache" && m.MountPath == "/cache" }) {
		t.Errorf("the preset's volume was not applied: %v, %v", pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts)
	}
	_, err = pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "privileged-" + name}, Spec: podSpec(true)}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "Privileged containers are not allowed") {
		t.Errorf("a privileged pod: want the policy's refusal, got %v", err)
	}
	labels := map[string]string{"app": "agent-" + strings.ReplaceAll(name, ".", "-")}
	ds, err := client.AppsV1().DaemonSets(namespace).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: labels["app"]},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(false)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a DaemonSet: %v", err)
	}
	if got := ds.Annotations[initializers.PendingAnnotation]; got != "daemonsets.upgrade.example.com" {
		t.Errorf("the DaemonSet is pending %q, want the InitializerConfiguration's daemonsets.upgrade.example.com", got)
	}
}

// storedAPIVersion reads an object of ours straight from etcd (they are stored as JSON) and
// returns the apiVersion it is stored in.
func storedAPIVersion(t *testing.T, etcd *framework.Etcd, name string) string {
	t.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get(context.Background(), prefix+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if !strings.HasSuffix(string(kv.Key), "/"+name) {
			continue
		}
		value, err := client.Get(context.Background(), string(kv.Key))
		if err != nil || len(value.Kvs) != 1 {
			t.Fatalf("reading %s: %v", kv.Key, err)
		}
		var meta metav1.TypeMeta
		if err := json.Unmarshal(value.Kvs[0].Value, &meta); err != nil {
			t.Fatalf("%s is not JSON: %v", kv.Key, err)
		}
		return meta.APIVersion
	}
	t.Fatalf("no key of %s under %s in etcd", name, prefix)
	return ""
}

// kitPlugins are the admission plugins the deploy kit's kubeadm configuration enables (its
// apiServer extraArgs' enable-admission-plugins).
func kitPlugins(t *testing.T, root string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, deployKubeadmConfig))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var config struct {
			Kind      string `json:"kind"`
			APIServer struct {
				ExtraArgs []struct{ Name, Value string } `json:"extraArgs"`
			} `json:"apiServer"`
		}
		if err := yaml.Unmarshal([]byte(doc), &config); err != nil {
			t.Fatalf("%s: %v", deployKubeadmConfig, err)
		}
		for _, arg := range config.APIServer.ExtraArgs {
			if config.Kind == "ClusterConfiguration" && arg.Name == "enable-admission-plugins" {
				return strings.Split(arg.Value, ",")
			}
		}
	}
	t.Fatalf("%s enables no admission plugin", deployKubeadmConfig)
	return nil
}

// kitObjects are the deploy kit's example PodSecurityPolicies and grants (what operating.md
// applies before enabling the plugin), in order, and the policies as objects of ours.
func kitObjects(t *testing.T) ([]*unstructured.Unstructured, []ourObject) {
	t.Helper()
	docs, err := podsecuritypolicy.Documents()
	if err != nil {
		t.Fatal(err)
	}
	var objects []*unstructured.Unstructured
	var policies []ourObject
	for _, doc := range docs {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatal(err)
		}
		if obj.GetKind() == "PodSecurityPolicy" {
			policies = append(policies, ourObject{pspResource, false, string(doc), "policy/v1beta1"})
			continue
		}
		objects = append(objects, obj)
	}
	if len(policies) == 0 || len(objects) == 0 {
		t.Fatalf("the deploy kit has %d policies and %d grants, want both", len(policies), len(objects))
	}
	return objects, policies
}

// kitResource is the resource of a grant of the kit.
func kitResource(t *testing.T, obj *unstructured.Unstructured) (schema.GroupVersionResource, bool) {
	t.Helper()
	rbac := schema.GroupVersion{Group: "rbac.authorization.k8s.io", Version: "v1"}
	switch obj.GetKind() {
	case "ClusterRole":
		return rbac.WithResource("clusterroles"), false
	case "ClusterRoleBinding":
		return rbac.WithResource("clusterrolebindings"), false
	case "Role":
		return rbac.WithResource("roles"), true
	case "RoleBinding":
		return rbac.WithResource("rolebindings"), true
	}
	t.Fatalf("the deploy kit's %s %s: a kind this test does not apply", obj.GetKind(), obj.GetName())
	return schema.GroupVersionResource{}, false
}

// grantDeveloper lets the developer create pods and DaemonSets in the namespace, and waits
// until the authorizer says so.
func grantDeveloper(t *testing.T, server *framework.APIServer) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: developer, Namespace: namespace},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get"}},
			{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"create", "get"}},
		},
	}
	if _, err := server.Client.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: developer, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: developer},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: developer}},
	}
	if _, err := server.Client.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client := asDeveloper(server)
	for _, attrs := range []*authorizationv1.ResourceAttributes{
		{Namespace: namespace, Verb: "create", Resource: "pods"},
		{Namespace: namespace, Verb: "create", Group: "apps", Resource: "daemonsets"},
		{Namespace: namespace, Verb: "use", Group: "policy", Resource: "podsecuritypolicies", Name: "baseline"},
	} {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			review, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs},
			}, metav1.CreateOptions{})
			return err == nil && review.Status.Allowed, nil
		})
		if err != nil {
			t.Fatalf("the developer may not %s %s/%s in %s: %v", attrs.Verb, attrs.Group, attrs.Resource, namespace, err)
		}
	}
}

// asDeveloper is a client acting as the developer, as kubectl --as does.
func asDeveloper(server *framework.APIServer) kubernetes.Interface {
	config := rest.CopyConfig(server.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: developer}
	return kubernetes.NewForConfigOrDie(config)
}
