package initialresources

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	api "k8s.io/kubernetes/pkg/apis/core"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

// newTestPlugin is the plugin with cfg's settings (Prometheus the only source unless
// mutate says otherwise) over history in place of a Prometheus server.
func newTestPlugin(t testing.TB, history usageHistory, mutate func(*admissionv1alpha1.InitialResourcesConfiguration)) *Plugin {
	t.Helper()
	cfg := &admissionv1alpha1.InitialResourcesConfiguration{
		Sources:    []admissionv1alpha1.InitialResourcesSourceName{admissionv1alpha1.InitialResourcesSourcePrometheus},
		Prometheus: &admissionv1alpha1.InitialResourcesPrometheus{URL: "http://prometheus.invalid"},
		MissWait:   &metav1.Duration{Duration: 5 * time.Second}, // the most allowed: the fake answers at once
	}
	if mutate != nil {
		mutate(cfg)
	}
	SetDefaults(cfg)
	if errs := Validate(cfg); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if history != nil {
		p.setHistory(history, time.Minute)
	}
	return p
}

func podAttributes(pod *api.Pod) admission.Attributes {
	return admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), pod.Namespace, pod.Name,
		api.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{})
}

// historyOf is a usage history with a week of samples in namespace ns for each image: cpu
// millicores and memory bytes whose 90th percentile is the value given.
func historyOf(byImage map[string][2]int) *fakeHistory {
	h := &fakeHistory{samples: map[historyQuery][]float64{}}
	for written, v := range byImage {
		img, _ := parseImage(written)
		h.samples[historyQuery{api.ResourceCPU, img.key, true, "ns", week}] = scaled(v[0])
		h.samples[historyQuery{api.ResourceMemory, img.key, true, "ns", week}] = scaled(v[1])
	}
	return h
}

// scaled is 30 samples whose 90th percentile (the 27th) is p90.
func scaled(p90 int) []float64 {
	s := make([]float64, 30)
	for i := range s {
		s[i] = float64(p90) * float64(i+1) / 27
	}
	return s
}

func container(name, image string, requests, limits api.ResourceList) api.Container {
	return api.Container{Name: name, Image: image, Resources: api.ResourceRequirements{Requests: requests, Limits: limits}}
}

func quantities(cpu, memory string) api.ResourceList {
	l := api.ResourceList{}
	if cpu != "" {
		l[api.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[api.ResourceMemory] = resource.MustParse(memory)
	}
	return l
}

func TestAdmit(t *testing.T) {
	history := map[string][2]int{"nginx:1.25": {250, 64 << 20}, "busybox": {10, 1 << 20}}
	tests := []struct {
		name           string
		init, regular  []api.Container
		wantInit       []api.ResourceList
		wantRegular    []api.ResourceList
		wantAnnotation string
	}{
		{
			name:           "both resources of a container that sets neither",
			regular:        []api.Container{container("web", "nginx:1.25", nil, nil)},
			wantRegular:    []api.ResourceList{quantities("250m", "67108864")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for container web",
		},
		{
			name:           "a cpu request set: memory only",
			regular:        []api.Container{container("web", "nginx:1.25", quantities("1", ""), nil)},
			wantRegular:    []api.ResourceList{quantities("1", "67108864")},
			wantAnnotation: "Initial Resources plugin set: memory request for container web",
		},
		{
			name:           "a memory limit set: cpu only, the limit kept",
			regular:        []api.Container{container("web", "nginx:1.25", nil, quantities("", "1Gi"))},
			wantRegular:    []api.ResourceList{quantities("250m", "")},
			wantAnnotation: "Initial Resources plugin set: cpu request for container web",
		},
		{
			name:        "requests and limits set: untouched",
			regular:     []api.Container{container("web", "nginx:1.25", quantities("1", ""), quantities("", "1Gi"))},
			wantRegular: []api.ResourceList{quantities("1", "")},
		},
		{
			name: "init containers first, as 1.10 wrote them",
			init: []api.Container{container("setup", "busybox", nil, nil)},
			regular: []api.Container{container("web", "nginx:1.25", nil, nil),
				container("sidecar", "busybox", quantities("5m", ""), nil)},
			wantInit:    []api.ResourceList{quantities("10m", "1048576")},
			wantRegular: []api.ResourceList{quantities("250m", "67108864"), quantities("5m", "1048576")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for init container setup; " +
				"cpu, memory request for container web; memory request for container sidecar",
		},
		{
			name: "1.10's TestManyContainers: each container's missing resources, in 1.10's words",
			init: []api.Container{container("i0", "busybox", nil, nil)},
			regular: []api.Container{container("c0", "busybox", nil, nil), container("c1", "busybox", quantities("", "300"), nil),
				container("c2", "busybox", quantities("300m", ""), nil), container("c3", "busybox", quantities("300m", "300"), nil)},
			wantInit: []api.ResourceList{quantities("10m", "1048576")},
			wantRegular: []api.ResourceList{quantities("10m", "1048576"), quantities("10m", "300"), quantities("300m", "1048576"),
				quantities("300m", "300")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for init container i0; cpu, memory request for container c0; " +
				"cpu request for container c1; memory request for container c2",
		},
		{
			name:        "an image without history: untouched",
			regular:     []api.Container{container("web", "nginx:1.26", nil, nil)},
			wantRegular: []api.ResourceList{nil},
		},
		{
			name:        "not an image reference: untouched",
			regular:     []api.Container{container("web", "Not An Image", nil, nil)},
			wantRegular: []api.ResourceList{nil},
		},
		{
			name:           "the image spelt as the runtime reports it",
			regular:        []api.Container{container("web", "docker.io/library/nginx:1.25", nil, nil)},
			wantRegular:    []api.ResourceList{quantities("250m", "67108864")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for container web",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPlugin(t, historyOf(history), nil)
			pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"},
				Spec: api.PodSpec{InitContainers: tc.init, Containers: tc.regular}}
			if err := p.Admit(context.Background(), podAttributes(pod), nil); err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.wantInit {
				if diff := cmp.Diff(want, pod.Spec.InitContainers[i].Resources.Requests, quantityEqual); diff != "" {
					t.Errorf("init container %d requests (-want +got):\n%s", i, diff)
				}
			}
			for i, want := range tc.wantRegular {
				if diff := cmp.Diff(want, pod.Spec.Containers[i].Resources.Requests, quantityEqual); diff != "" {
					t.Errorf("container %d requests (-want +got):\n%s", i, diff)
				}
			}
			if got := pod.Annotations[Annotation]; got != tc.wantAnnotation {
				t.Errorf("annotation %q, want %q", got, tc.wantAnnotation)
			}
		})
	}
}

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func TestHandles(t *testing.T) {
	p := newTestPlugin(t, historyOf(nil), nil)
	for _, op := range []admission.Operation{admission.Update, admission.Delete, admission.Connect} {
		if p.Handles(op) {
			t.Errorf("handles %s; 1.10 estimated on create only", op)
		}
	}
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"}, Spec: api.PodSpec{Containers: []api.Container{container("web", "nginx", nil, nil)}}}
	for _, attrs := range []admission.Attributes{
		admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), "ns", "pod", api.Resource("pods").WithVersion("v1"), "ephemeralcontainers", admission.Create, nil, false, nil),
		admission.NewAttributesRecord(pod, nil, api.Kind("ConfigMap").WithVersion("v1"), "ns", "pod", api.Resource("configmaps").WithVersion("v1"), "", admission.Create, nil, false, nil),
	} {
		if err := p.Admit(context.Background(), attrs, nil); err != nil || pod.Spec.Containers[0].Resources.Requests != nil {
			t.Errorf("%s/%s: %v, requests %v; want ignored", attrs.GetResource().Resource, attrs.GetSubresource(), err, pod.Spec.Containers[0].Resources.Requests)
		}
	}
}

// TestAdmitNeverWaitsLongerThanTheMissWait: with the source stuck, the pod is admitted
// unchanged once the miss wait is over; the estimate found later serves the next pod.
func TestAdmitNeverWaitsLongerThanTheMissWait(t *testing.T) {
	h := historyOf(map[string][2]int{"nginx": {100, 100}})
	h.release = make(chan struct{})
	p := newTestPlugin(t, h, func(c *admissionv1alpha1.InitialResourcesConfiguration) {
		c.MissWait = &metav1.Duration{Duration: 10 * time.Millisecond}
	})
	unfinished := missesAdmitted.WithLabelValues("Prometheus")
	before, _ := testutil.GetCounterMetricValue(unfinished)
	newPod := func() *api.Pod {
		return &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"}, Spec: api.PodSpec{Containers: []api.Container{container("web", "nginx", nil, nil)}}}
	}
	first := newPod()
	if err := p.Admit(context.Background(), podAttributes(first), nil); err != nil {
		t.Fatal(err)
	}
	if first.Spec.Containers[0].Resources.Requests != nil || first.Annotations != nil {
		t.Errorf("the first pod was changed: %+v %v", first.Spec.Containers[0].Resources, first.Annotations)
	}
	if after, _ := testutil.GetCounterMetricValue(unfinished); after != before+1 {
		t.Errorf("%s went from %v to %v, want one more", "lookups_unfinished_total", before, after)
	}
	close(h.release)
	waitFor(t, "the estimate to be cached", func() bool {
		next := newPod()
		_ = p.Admit(context.Background(), podAttributes(next), nil)
		return next.Spec.Containers[0].Resources.Requests != nil
	})
}

// TestAdmitSourceDown: a failing source admits the pod unchanged and is counted.
func TestAdmitSourceDown(t *testing.T) {
	h := historyOf(nil)
	h.err = errors.New("connection refused")
	p := newTestPlugin(t, h, nil)
	failures := sourceErrors.WithLabelValues("Prometheus")
	before, _ := testutil.GetCounterMetricValue(failures)
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"}, Spec: api.PodSpec{Containers: []api.Container{container("web", "nginx", nil, nil)}}}
	if err := p.Admit(context.Background(), podAttributes(pod), nil); err != nil {
		t.Fatalf("Admit: %v; a source's failure must never refuse a pod", err)
	}
	if pod.Spec.Containers[0].Resources.Requests != nil || pod.Annotations != nil {
		t.Errorf("the pod was changed: %+v %v", pod.Spec.Containers[0].Resources, pod.Annotations)
	}
	if after, _ := testutil.GetCounterMetricValue(failures); after != before+1 {
		t.Errorf("source_errors_total went from %v to %v, want one more", before, after)
	}
}

var (
	replicaSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	jobs        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

func owned(obj *unstructured.Unstructured, apiVersion, kind, name string) *unstructured.Unstructured {
	yes := true
	obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: &yes}})
	return obj
}

func object(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// autoscalerFor is a VPA targeting the Deployment web, recommending for container web.
func autoscalerFor(targetKind, targetName string) *unstructured.Unstructured {
	u := object("autoscaling.k8s.io/v1", "VerticalPodAutoscaler", "ns", "web-vpa")
	u.Object["spec"] = map[string]any{"targetRef": map[string]any{"apiVersion": "apps/v1", "kind": targetKind, "name": targetName}}
	u.Object["status"] = map[string]any{"recommendation": map[string]any{"containerRecommendations": []any{
		map[string]any{"containerName": "web",
			"target":         map[string]any{"cpu": "300m", "memory": "200Mi"},
			"uncappedTarget": map[string]any{"cpu": "2", "memory": "2Gi"}},
	}}}
	return u
}

func dynamicClient(objects ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		verticalPodAutoscalers: "VerticalPodAutoscalerList",
		replicaSets:            "ReplicaSetList",
		jobs:                   "JobList",
	}, objects...)
}

func TestAdmitFromVerticalPodAutoscaler(t *testing.T) {
	vpaFirst := func(c *admissionv1alpha1.InitialResourcesConfiguration) {
		c.Sources = []admissionv1alpha1.InitialResourcesSourceName{admissionv1alpha1.InitialResourcesSourceVerticalPodAutoscaler, admissionv1alpha1.InitialResourcesSourcePrometheus}
	}
	tests := []struct {
		name           string
		objects        []runtime.Object
		mutate         func(*admissionv1alpha1.InitialResourcesConfiguration)
		podOwner       [3]string // apiVersion, kind, name
		containers     []api.Container
		want           []api.ResourceList
		wantAnnotation string
	}{
		{
			name:           "a VPA targeting the pod's Deployment, through its ReplicaSet",
			objects:        []runtime.Object{autoscalerFor("Deployment", "web"), owned(object("apps/v1", "ReplicaSet", "ns", "web-abc"), "apps/v1", "Deployment", "web")},
			mutate:         vpaFirst,
			podOwner:       [3]string{"apps/v1", "ReplicaSet", "web-abc"},
			containers:     []api.Container{container("web", "nginx:1.25", nil, nil)},
			want:           []api.ResourceList{quantities("300m", "200Mi")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for container web from VerticalPodAutoscaler web-vpa",
		},
		{
			name:    "uncappedTarget when configured",
			objects: []runtime.Object{autoscalerFor("StatefulSet", "web")},
			mutate: func(c *admissionv1alpha1.InitialResourcesConfiguration) {
				vpaFirst(c)
				c.VerticalPodAutoscaler = &admissionv1alpha1.InitialResourcesVerticalPodAutoscaler{Recommendation: admissionv1alpha1.InitialResourcesRecommendationUncappedTarget}
			},
			podOwner:       [3]string{"apps/v1", "StatefulSet", "web"},
			containers:     []api.Container{container("web", "nginx:1.25", nil, nil)},
			want:           []api.ResourceList{quantities("2", "2Gi")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for container web from VerticalPodAutoscaler web-vpa",
		},
		{
			name:       "the VPA's cpu, the history's memory",
			objects:    []runtime.Object{autoscalerFor("StatefulSet", "web")},
			mutate:     vpaFirst,
			podOwner:   [3]string{"apps/v1", "StatefulSet", "web"},
			containers: []api.Container{container("web", "nginx:1.25", nil, quantities("", "1Gi")), container("other", "nginx:1.25", nil, nil)},
			want:       []api.ResourceList{quantities("300m", ""), quantities("250m", "67108864")},
			wantAnnotation: "Initial Resources plugin set: cpu request for container web from VerticalPodAutoscaler web-vpa; " +
				"cpu, memory request for container other",
		},
		{
			name:    "the history first when listed first",
			objects: []runtime.Object{autoscalerFor("StatefulSet", "web")},
			mutate: func(c *admissionv1alpha1.InitialResourcesConfiguration) {
				vpaFirst(c)
				c.Sources[0], c.Sources[1] = c.Sources[1], c.Sources[0]
			},
			podOwner:       [3]string{"apps/v1", "StatefulSet", "web"},
			containers:     []api.Container{container("web", "nginx:1.25", nil, nil)},
			want:           []api.ResourceList{quantities("250m", "67108864")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for container web",
		},
		{
			name:           "no VPA targets the pod's owner: the history",
			objects:        []runtime.Object{autoscalerFor("Deployment", "other")},
			mutate:         vpaFirst,
			podOwner:       [3]string{"apps/v1", "StatefulSet", "web"},
			containers:     []api.Container{container("web", "nginx:1.25", nil, nil)},
			want:           []api.ResourceList{quantities("250m", "67108864")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for container web",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPlugin(t, historyOf(map[string][2]int{"nginx:1.25": {250, 64 << 20}}), tc.mutate)
			p.SetDynamicClient(dynamicClient(tc.objects...))
			if err := p.ValidateInitialization(); err != nil {
				t.Fatal(err)
			}
			pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"}, Spec: api.PodSpec{Containers: tc.containers}}
			yes := true
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: tc.podOwner[0], Kind: tc.podOwner[1], Name: tc.podOwner[2], Controller: &yes}}
			if err := p.Admit(context.Background(), podAttributes(pod), nil); err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.want {
				if diff := cmp.Diff(want, pod.Spec.Containers[i].Resources.Requests, quantityEqual); diff != "" {
					t.Errorf("container %d requests (-want +got):\n%s", i, diff)
				}
			}
			if got := pod.Annotations[Annotation]; got != tc.wantAnnotation {
				t.Errorf("annotation %q, want %q", got, tc.wantAnnotation)
			}
		})
	}
}

// TestAdmitWithoutTheVPACRD: no VerticalPodAutoscaler resource is not an error.
func TestAdmitWithoutTheVPACRD(t *testing.T) {
	p := newTestPlugin(t, nil, func(c *admissionv1alpha1.InitialResourcesConfiguration) {
		c.Sources, c.Prometheus = nil, nil
	})
	client := dynamicClient()
	client.PrependReactor("list", "verticalpodautoscalers", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(verticalPodAutoscalers.GroupResource(), "")
	})
	p.SetDynamicClient(client)
	failures := sourceErrors.WithLabelValues("VerticalPodAutoscaler")
	before, _ := testutil.GetCounterMetricValue(failures)
	yes := true
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", Controller: &yes}}},
		Spec: api.PodSpec{Containers: []api.Container{container("web", "nginx", nil, nil)}}}
	if err := p.Admit(context.Background(), podAttributes(pod), nil); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Containers[0].Resources.Requests != nil {
		t.Errorf("requests %v, want none", pod.Spec.Containers[0].Resources.Requests)
	}
	listed := false
	for _, a := range client.Actions() {
		listed = listed || (a.GetVerb() == "list" && a.GetResource() == verticalPodAutoscalers)
	}
	if !listed {
		t.Error("the VerticalPodAutoscalers were not listed: the missing CRD was not met")
	}
	if after, _ := testutil.GetCounterMetricValue(failures); after != before {
		t.Errorf("source_errors_total went from %v to %v: a missing CRD is not an error", before, after)
	}
}

// TestFitLimitRanges: with fitLimitRanges, an estimate is raised to the LimitRange's min
// and lowered to its max and default limit.
func TestFitLimitRanges(t *testing.T) {
	p := newTestPlugin(t, historyOf(map[string][2]int{"nginx": {50, 512 << 20}, "busybox": {5000, 1 << 20}}), func(c *admissionv1alpha1.InitialResourcesConfiguration) {
		c.FitLimitRanges = true
	})
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer,
			Min:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Max:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Default: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
		{Type: corev1.LimitTypePod, Min: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}},
	}}}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(lr), 0)
	p.SetExternalKubeInformerFactory(factory)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"}, Spec: api.PodSpec{Containers: []api.Container{
		container("web", "nginx", nil, nil), container("batch", "busybox", nil, nil)}}}
	if err := p.Admit(context.Background(), podAttributes(pod), nil); err != nil {
		t.Fatal(err)
	}
	for i, want := range []api.ResourceList{quantities("100m", "256Mi"), quantities("2", "1048576")} {
		if diff := cmp.Diff(want, pod.Spec.Containers[i].Resources.Requests, quantityEqual); diff != "" {
			t.Errorf("container %d requests (-want +got):\n%s", i, diff)
		}
	}
}

// TestFitLimitRangesBeforeTheyAreListed: until the LimitRanges are listed, no estimate is set
// (it could not be kept within them), and the pod is not held waiting.
func TestFitLimitRangesBeforeTheyAreListed(t *testing.T) {
	p := newTestPlugin(t, historyOf(map[string][2]int{"nginx": {50, 512 << 20}}), func(c *admissionv1alpha1.InitialResourcesConfiguration) {
		c.FitLimitRanges = true
	})
	p.SetExternalKubeInformerFactory(informers.NewSharedInformerFactory(fake.NewClientset(), 0)) // never started
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"}, Spec: api.PodSpec{Containers: []api.Container{container("web", "nginx", nil, nil)}}}
	if err := p.Admit(context.Background(), podAttributes(pod), nil); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Containers[0].Resources.Requests != nil || pod.Annotations != nil {
		t.Errorf("the pod was changed: %v %v", pod.Spec.Containers[0].Resources.Requests, pod.Annotations)
	}
}
