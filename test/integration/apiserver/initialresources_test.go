package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initialresources"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// usageSeries is one container's usage history as cAdvisor's metrics record it, one sample
// an hour: the CPU counter growing at cores, the memory gauge at memory(hour).
type usageSeries struct {
	image, namespace, container, pod string
	// hours: the samples are taken first hours ago, then every hour until last hours ago.
	first, last int
	cores       float64
	memory      func(hour int) int64
}

func constant(v int64) func(int) int64 { return func(int) int64 { return v } }

const mi = 1 << 20

// The history the test's Prometheus serves. Each image's data is placed so that exactly one
// of 1.10's tiers has enough samples (30) for a pod in namespace ir-a.
var usageHistory = []usageSeries{
	// Tier 1: this image, ir-a, the last week. Memory 70% 100Mi, 25% 150Mi, 5% 400Mi: the
	// 90th percentile is 150Mi.
	{"registry.local:5000/team/web:v1", "ir-a", "web", "web-1", 167, 0, 0.25, func(h int) int64 {
		switch {
		case h%20 == 0:
			return 400 * mi
		case h%20 <= 5:
			return 150 * mi
		}
		return 100 * mi
	}},
	// cAdvisor's pod-level series (container="") of the same pod: never counted.
	{"registry.local:5000/team/web:v1", "ir-a", "", "web-1", 167, 0, 8, constant(10 << 30)},
	// Tier 2: this image, ir-a, the month before the last week (as a runtime names it).
	{"docker.io/library/nginx:1.25", "ir-a", "nginx", "nginx-1", 700, 200, 0.1, constant(64 * mi)},
	// Tier 3: this image, another namespace, the last week.
	{"docker.io/library/busybox:1.36", "ir-b", "sh", "sh-1", 100, 0, 0.005, constant(8 * mi)},
	// Tier 4: this image, another namespace, the month before.
	{"quay.io/app/api:2.0", "ir-b", "api", "api-1", 600, 200, 0.5, constant(256 * mi)},
	// Tier 5: another tag of the repository, anywhere: 401 samples in ir-b, 11 in ir-a.
	{"quay.io/app/worker:1.0", "ir-b", "worker", "worker-1", 600, 200, 0.05, constant(32 * mi)},
	{"quay.io/app/worker:1.0", "ir-a", "worker", "worker-2", 210, 200, 0.07, constant(48 * mi)},
	// An image whose containers use nothing measurable: every sample is 0.
	{"registry.local:5000/team/idle:v1", "ir-a", "idle", "idle-1", 167, 0, 0, constant(0)},
}

// openMetrics writes the history as OpenMetrics text for promtool, hours counted back from
// now's hour.
func openMetrics(now time.Time, series []usageSeries) []byte {
	var b bytes.Buffer
	hour := now.Truncate(time.Hour)
	labels := func(s usageSeries) string {
		return fmt.Sprintf(`{container=%q,image=%q,namespace=%q,pod=%q}`, s.container, s.image, s.namespace, s.pod)
	}
	b.WriteString("# TYPE container_cpu_usage_seconds counter\n")
	for _, s := range series {
		for h := s.first; h >= s.last; h-- {
			// A counter already running when its history starts (as a container's is), so
			// that rate() extrapolates its first hour like any other.
			used := s.cores * 3600 * float64(1000+s.first-h)
			fmt.Fprintf(&b, "container_cpu_usage_seconds_total%s %g %d\n", labels(s), used, hour.Add(-time.Duration(h)*time.Hour).Unix())
		}
	}
	b.WriteString("# TYPE container_memory_working_set_bytes gauge\n")
	for _, s := range series {
		for h := s.first; h >= s.last; h-- {
			fmt.Fprintf(&b, "container_memory_working_set_bytes%s %d %d\n", labels(s), s.memory(h), hour.Add(-time.Duration(h)*time.Hour).Unix())
		}
	}
	b.WriteString("# EOF\n")
	return b.Bytes()
}

// initialResourcesConfig is an admission config enabling InitialResources on prometheusURL,
// at the history's hourly resolution, with settings added.
func initialResourcesConfig(t *testing.T, prometheusURL, settings string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admission.yaml")
	config := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: InitialResources
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: InitialResourcesConfiguration
    missWait: 5s
%s    prometheus:
      url: %s
      step: 1h
      cpuRateWindow: 2h
`, settings, prometheusURL)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// namedNamespace creates the namespace name with its default ServiceAccount.
func namedNamespace(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func irContainer(name, image string, requests corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Image: image, Resources: corev1.ResourceRequirements{Requests: requests}}
}

func resourceList(cpu, memory string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return l
}

// irCase is a pod created through a server with InitialResources, and what it must become.
type irCase struct {
	name           string
	namespace      string
	init, regular  []corev1.Container
	podResources   *corev1.ResourceRequirements
	owner          *metav1.OwnerReference
	wantInit       []corev1.ResourceList
	wantRegular    []corev1.ResourceList
	wantAnnotation string
}

func (c irCase) run(t *testing.T, client kubernetes.Interface) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "ir-"},
		Spec: corev1.PodSpec{InitContainers: c.init, Containers: c.regular, Resources: c.podResources}}
	if c.owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*c.owner}
	}
	created, err := client.CoreV1().Pods(c.namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(kind string, got []corev1.Container, want []corev1.ResourceList) {
		for i, w := range want {
			if !sameResources(got[i].Resources.Requests, w) {
				t.Errorf("%s %s: requests %v, want %v", kind, got[i].Name, got[i].Resources.Requests, w)
			}
		}
	}
	check("init container", created.Spec.InitContainers, c.wantInit)
	check("container", created.Spec.Containers, c.wantRegular)
	if got := created.Annotations[initialresources.Annotation]; got != c.wantAnnotation {
		t.Errorf("annotation %q, want %q", got, c.wantAnnotation)
	}
	return created
}

func sameResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

var verticalPodAutoscalers = schema.GroupVersionResource{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalers"}

// installVPACRD installs a VerticalPodAutoscaler CRD (the fields the plugin reads are kept as
// written) and waits until it is established.
func installVPACRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		// The VPA's own CRD carries this approval: autoscaling.k8s.io is a protected group.
		ObjectMeta: metav1.ObjectMeta{Name: "verticalpodautoscalers.autoscaling.k8s.io",
			Annotations: map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/63797"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "autoscaling.k8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "verticalpodautoscalers", Singular: "verticalpodautoscaler",
				Kind: "VerticalPodAutoscaler", ListKind: "VerticalPodAutoscalerList", ShortNames: []string{"vpa"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	if _, err := dyn.Resource(crdResource).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := dyn.Resource(crdResource).Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !established(got) {
			return false, nil
		}
		_, err = dyn.Resource(verticalPodAutoscalers).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the VerticalPodAutoscaler CRD is not served: %v", err)
	}
}

// TestInitialResources runs the plugin against a real Prometheus serving a month of cAdvisor
// metrics backfilled with promtool: every tier of 1.10's, both resources, init containers,
// requests already set, images without data, namespace-only, a VerticalPodAutoscaler's
// recommendation, and Prometheus down.
func TestInitialResources(t *testing.T) {
	bins := framework.FindBinaries(t)
	prometheus := framework.StartPrometheus(t, openMetrics(time.Now(), usageHistory))
	etcd := framework.StartEtcd(t, bins.Etcd)
	server := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/initialresources",
		"--enable-admission-plugins=InitialResources",
		"--admission-control-config-file="+initialResourcesConfig(t, prometheus.URL, ""))
	client := server.Client
	for _, ns := range []string{"ir-a", "ir-b"} {
		namedNamespace(t, client, ns)
	}
	const set = "Initial Resources plugin set: "

	t.Run("Prometheus", func(t *testing.T) {
		for _, tc := range []irCase{
			{name: "tier 1: this image in the namespace over a week; the 90th percentile; pod-level series left out", namespace: "ir-a",
				regular:     []corev1.Container{irContainer("web", "registry.local:5000/team/web:v1", nil)},
				wantRegular: []corev1.ResourceList{resourceList("250m", "150Mi")}, wantAnnotation: set + "cpu, memory request for container web"},
			{name: "tier 2: this image in the namespace over a month, spelt as the pod spells it", namespace: "ir-a",
				regular:     []corev1.Container{irContainer("nginx", "nginx:1.25", nil)},
				wantRegular: []corev1.ResourceList{resourceList("100m", "64Mi")}, wantAnnotation: set + "cpu, memory request for container nginx"},
			{name: "tier 3: this image anywhere over a week", namespace: "ir-a",
				regular:     []corev1.Container{irContainer("sh", "busybox:1.36", nil)},
				wantRegular: []corev1.ResourceList{resourceList("5m", "8Mi")}, wantAnnotation: set + "cpu, memory request for container sh"},
			{name: "tier 4: this image anywhere over a month", namespace: "ir-a",
				regular:     []corev1.Container{irContainer("api", "quay.io/app/api:2.0", nil)},
				wantRegular: []corev1.ResourceList{resourceList("500m", "256Mi")}, wantAnnotation: set + "cpu, memory request for container api"},
			{name: "tier 5: any tag of the repository anywhere over a month", namespace: "ir-a",
				regular:     []corev1.Container{irContainer("worker", "quay.io/app/worker:2.0", nil)},
				wantRegular: []corev1.ResourceList{resourceList("50m", "32Mi")}, wantAnnotation: set + "cpu, memory request for container worker"},
			{name: "init containers and containers, each resource a container leaves unset", namespace: "ir-a",
				init: []corev1.Container{irContainer("setup", "busybox:1.36", nil)},
				regular: []corev1.Container{irContainer("web", "registry.local:5000/team/web:v1", resourceList("1", "")),
					irContainer("api", "quay.io/app/api:2.0", resourceList("", "1Gi"))},
				wantInit:    []corev1.ResourceList{resourceList("5m", "8Mi")},
				wantRegular: []corev1.ResourceList{resourceList("1", "150Mi"), resourceList("500m", "1Gi")},
				wantAnnotation: set + "cpu, memory request for init container setup; memory request for container web; " +
					"cpu request for container api"},
			{name: "requests set: untouched", namespace: "ir-a",
				regular:     []corev1.Container{irContainer("web", "registry.local:5000/team/web:v1", resourceList("1", "1Gi"))},
				wantRegular: []corev1.ResourceList{resourceList("1", "1Gi")}},
			{name: "an image without data, nor its repository: untouched", namespace: "ir-a",
				regular:     []corev1.Container{irContainer("web", "registry.local:5000/team/unseen:v1", nil)},
				wantRegular: []corev1.ResourceList{{}}},
		} {
			t.Run(tc.name, func(t *testing.T) { tc.run(t, client) })
		}
	})

	t.Run("namespace only", func(t *testing.T) {
		// Another server on the same etcd, limited to the pod's namespace.
		only := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/initialresources",
			"--enable-admission-plugins=InitialResources",
			"--admission-control-config-file="+initialResourcesConfig(t, prometheus.URL, "    namespaceOnly: true\n    sources: [Prometheus]\n"))
		for _, tc := range []irCase{
			{name: "the repository in the namespace: its 11 samples, the last history tried", namespace: "ir-a",
				regular:     []corev1.Container{irContainer("worker", "quay.io/app/worker:2.0", nil)},
				wantRegular: []corev1.ResourceList{resourceList("70m", "48Mi")}, wantAnnotation: set + "cpu, memory request for container worker"},
			{name: "data in another namespace only: untouched", namespace: "ir-a",
				regular:     []corev1.Container{irContainer("sh", "busybox:1.36", nil)},
				wantRegular: []corev1.ResourceList{{}}},
		} {
			t.Run(tc.name, func(t *testing.T) { tc.run(t, only.Client) })
		}
	})

	t.Run("VerticalPodAutoscaler", func(t *testing.T) {
		dyn := dynamic.NewForConfigOrDie(server.Config)
		installVPACRD(t, dyn)
		// A namespace no pod was created in yet: its VPAs are read at its first pod.
		namedNamespace(t, client, "ir-vpa")
		vpa := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
			"metadata": map[string]any{"name": "web"},
			"spec":     map[string]any{"targetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
			"status": map[string]any{"recommendation": map[string]any{"containerRecommendations": []any{
				map[string]any{"containerName": "web", "target": map[string]any{"cpu": "350m", "memory": "300Mi"},
					"uncappedTarget": map[string]any{"cpu": "3", "memory": "3Gi"}},
			}}},
		}}
		if _, err := dyn.Resource(verticalPodAutoscalers).Namespace("ir-vpa").Create(context.Background(), vpa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		yes := true
		rs := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "ReplicaSet",
			"metadata": map[string]any{"name": "web-5d4f8", "ownerReferences": []any{map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "0b5c1e52-6a4e-4b7d-9d1b-1f5b0c3a2e11", "controller": true}}},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "registry.local:5000/team/web:v1"}}}}},
		}}
		created, err := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}).Namespace("ir-vpa").
			Create(context.Background(), rs, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owner := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: created.GetName(), UID: types.UID(created.GetUID()), Controller: &yes}
		irCase{namespace: "ir-vpa", owner: owner,
			regular: []corev1.Container{irContainer("web", "registry.local:5000/team/web:v1", nil), irContainer("sh", "busybox:1.36", nil)},
			// web: the VPA's target (the source listed first); sh, for which the VPA has
			// nothing: the usage history.
			wantRegular: []corev1.ResourceList{resourceList("350m", "300Mi"), resourceList("5m", "8Mi")},
			wantAnnotation: set + "cpu, memory request for container web from VerticalPodAutoscaler web; " +
				"cpu, memory request for container sh",
		}.run(t, client)
	})

	// PodLevelResources (on by default): the pod's own request of a resource is what its
	// containers share; a container's 150Mi from history would exceed the pod's 64Mi, which
	// validation refuses (422) where the pod is admitted without the plugin.
	t.Run("pod-level resources: left to the pod", func(t *testing.T) {
		irCase{namespace: "ir-a",
			regular:        []corev1.Container{irContainer("web", "registry.local:5000/team/web:v1", nil)},
			podResources:   &corev1.ResourceRequirements{Requests: resourceList("", "64Mi")},
			wantRegular:    []corev1.ResourceList{resourceList("250m", "")},
			wantAnnotation: set + "cpu request for container web",
		}.run(t, client)
	})

	// fitLimitRanges, and upstream's LimitRanger after the plugin (on by default): a
	// namespace whose LimitRange gives a 1-cpu limit and allows twice that as a ratio. Without
	// the fit, web's 250m from history (tier 3) is refused for its ratio of 4, and the idle
	// image's 0 request for having none.
	t.Run("LimitRanges: maxLimitRequestRatio kept, no zero request", func(t *testing.T) {
		namedNamespace(t, client, "ir-lr")
		lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Default: resourceList("1", "1Gi"), MaxLimitRequestRatio: resourceList("2", ""),
		}}}}
		if _, err := client.CoreV1().LimitRanges("ir-lr").Create(context.Background(), lr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The plugin's informer learns of the LimitRange: wait until a dry run's estimate is
		// kept within it (today's code never gets there: LimitRanger refuses its 250m).
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
			irContainer("web", "registry.local:5000/team/web:v1", nil)}}}
		var lastErr error
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := client.CoreV1().Pods("ir-lr").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				lastErr = err
				return false, nil
			}
			cpu := got.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
			return cpu.Cmp(resource.MustParse("500m")) == 0, nil
		})
		if err != nil {
			t.Fatalf("no dry run in ir-lr was estimated within its LimitRange (last refusal: %v): %v", lastErr, err)
		}
		for _, tc := range []irCase{
			{name: "raised to the default limit over the ratio", namespace: "ir-lr",
				regular:     []corev1.Container{irContainer("web", "registry.local:5000/team/web:v1", nil)},
				wantRegular: []corev1.ResourceList{resourceList("500m", "150Mi")}, wantAnnotation: set + "cpu, memory request for container web"},
			{name: "an idle image: no zero request, LimitRanger's default request", namespace: "ir-lr",
				regular:     []corev1.Container{irContainer("idle", "registry.local:5000/team/idle:v1", nil)},
				wantRegular: []corev1.ResourceList{resourceList("1", "1Gi")}},
		} {
			t.Run(tc.name, func(t *testing.T) { tc.run(t, client) })
		}
	})

	// fitLimitRanges by default: an estimate never turns an admission into a refusal. With
	// 1.10's behaviour (fitLimitRanges: false), web's 250m was refused by LimitRanger: 422
	// over a default limit of 100m, 403 under a min of 500m; without the plugin both pods are
	// admitted.
	t.Run("LimitRanges by default: an estimate over a default limit or under a min is fitted, not refused", func(t *testing.T) {
		for _, lr := range []struct {
			namespace string
			item      corev1.LimitRangeItem
			wantCPU   string
		}{
			{namespace: "ir-lr-default", item: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: resourceList("100m", "")}, wantCPU: "100m"},
			{namespace: "ir-lr-min", item: corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: resourceList("500m", "")}, wantCPU: "500m"},
		} {
			t.Run(lr.namespace, func(t *testing.T) {
				namedNamespace(t, client, lr.namespace)
				if _, err := client.CoreV1().LimitRanges(lr.namespace).Create(context.Background(), &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits"},
					Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{lr.item}}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
					irContainer("web", "registry.local:5000/team/web:v1", nil)}}}
				// The plugin's informer learns of the LimitRange: until it has, the dry run is
				// refused or estimated at 250m.
				var last error
				err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
					got, err := client.CoreV1().Pods(lr.namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					if err != nil {
						last = err
						return false, nil
					}
					cpu := got.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
					return cpu.Cmp(resource.MustParse(lr.wantCPU)) == 0, nil
				})
				if err != nil {
					t.Fatalf("web in %s was never estimated at %s (last refusal: %v): %v", lr.namespace, lr.wantCPU, last, err)
				}
				created, err := client.CoreV1().Pods(lr.namespace).Create(context.Background(), probe, metav1.CreateOptions{})
				if err != nil {
					t.Fatalf("web in %s: %v", lr.namespace, err)
				}
				if cpu := created.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse(lr.wantCPU)) != 0 {
					t.Errorf("web in %s requests cpu %s, want %s", lr.namespace, cpu.String(), lr.wantCPU)
				}
			})
		}
	})

	// A mutating webhook in the chain (a labeller, as a sidecar injector would be) makes the
	// server run the plugin a second time; the pod is created by a service account holding
	// only what the ReplicaSet controller holds in the namespace: create pods.
	t.Run("a mutating webhook in the chain, a creator with only create pods", func(t *testing.T) {
		const ns = "ir-webhook"
		namedNamespace(t, client, ns)
		ctx := context.Background()
		if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "creator"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		creator := asPodCreator(t, server, client, ns, "creator")
		labeller := installLabeller(t, client, "", "v1", "pods")
		labeller.waitCalled(t, func(ctx context.Context) error {
			_, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{irContainer("c", "busybox:1.36", resourceList("1m", "1Mi"))}}},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Logf("the probe: %v", err)
			}
			return err
		})
		created := irCase{namespace: ns,
			regular: []corev1.Container{irContainer("web", "registry.local:5000/team/web:v1", nil), irContainer("sh", "busybox:1.36", nil)},
			// web:v1 and busybox:1.36 anywhere over a week (tier 3).
			wantRegular:    []corev1.ResourceList{resourceList("250m", "150Mi"), resourceList("5m", "8Mi")},
			wantAnnotation: set + "cpu, memory request for container web; cpu, memory request for container sh",
		}.run(t, creator)
		if created.Labels[labellerLabel] != "true" {
			t.Errorf("labels %v: the webhook did not label the pod", created.Labels)
		}
	})

	// An image whose repository has history (web:v1's): with Prometheus up it would be
	// estimated.
	t.Run("Prometheus down: admitted unchanged, and counted", func(t *testing.T) {
		const errors = `portcullis_initialresources_source_errors_total{source="Prometheus"}`
		before := sampleValue(t, client, errors)
		prometheus.Stop(t)
		irCase{namespace: "ir-a",
			regular:     []corev1.Container{irContainer("web", "registry.local:5000/team/web:v3-unseen", nil)},
			wantRegular: []corev1.ResourceList{{}},
		}.run(t, client)
		if after := sampleValue(t, client, errors); after != before+1 {
			t.Errorf("%s went from %v to %v, want one more", errors, before, after)
		}
	})
}
