package initialresources

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
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
	admissiontesting "k8s.io/apiserver/pkg/admission/testing"
	"k8s.io/apiserver/pkg/authentication/user"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"
	"k8s.io/utils/ptr"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission/validation"
)

// newTestPlugin is the plugin with cfg's settings (Prometheus the only source unless
// mutate says otherwise) over history in place of a Prometheus server.
func newTestPlugin(t testing.TB, history usageHistory, mutate func(*portcullisapi.InitialResourcesConfiguration)) *Plugin {
	t.Helper()
	cfg := &portcullisapi.InitialResourcesConfiguration{
		Sources:    []portcullisapi.InitialResourcesSourceName{portcullisapi.InitialResourcesSourcePrometheus},
		Prometheus: &portcullisapi.InitialResourcesPrometheus{URL: "http://prometheus.invalid"},
		MissWait:   &metav1.Duration{Duration: 5 * time.Second}, // the most allowed: the fake answers at once
		// The estimates alone; the tests of fitting set it (it defaults to true).
		FitLimitRanges: ptr.To(false),
	}
	if mutate != nil {
		mutate(cfg)
	}
	setDefaults(t, cfg)
	if errs := validation.ValidateInitialResourcesConfiguration(cfg, nil); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if history != nil {
		p.setHistory(history, func(time.Duration) time.Duration { return time.Minute })
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
	history["idle:1"] = [2]int{0, 0} // an image whose containers use nothing measurable
	tests := []struct {
		name           string
		init, regular  []api.Container
		podLevel       *api.ResourceRequirements
		wantInit       []api.ResourceList
		wantRegular    []api.ResourceList
		wantAnnotation string
	}{
		{
			// Without the skip, the container's 64Mi from history plus the init container's
			// exceed nothing here, but 300Mi would exceed a pod's 64Mi: validation refuses
			// a pod whose containers request more than the pod.
			name:           "pod-level memory request: the containers' memory is the pod's to share",
			regular:        []api.Container{container("web", "nginx:1.25", nil, nil)},
			podLevel:       &api.ResourceRequirements{Requests: quantities("", "32Mi")},
			wantRegular:    []api.ResourceList{quantities("250m", "")},
			wantAnnotation: "Initial Resources plugin set: cpu request for container web",
		},
		{
			name:        "pod-level limits of both: nothing set",
			init:        []api.Container{container("setup", "busybox", nil, nil)},
			regular:     []api.Container{container("web", "nginx:1.25", nil, nil)},
			podLevel:    &api.ResourceRequirements{Limits: quantities("1", "1Gi")},
			wantInit:    []api.ResourceList{nil},
			wantRegular: []api.ResourceList{nil},
		},
		{
			name:        "an idle image: a zero estimate is no estimate",
			regular:     []api.Container{container("idle", "idle:1", nil, nil)},
			wantRegular: []api.ResourceList{nil},
		},
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
				Spec: api.PodSpec{InitContainers: tc.init, Containers: tc.regular, Resources: tc.podLevel}}
			if err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), podAttributes(pod), nil); err != nil {
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
	p := newTestPlugin(t, h, func(c *portcullisapi.InitialResourcesConfiguration) {
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
	// The next pod meets the remembered failure: nothing runs for it, so it is not a lookup
	// left unfinished, and the failure is not counted again.
	unfinished := missesAdmitted.WithLabelValues("Prometheus")
	beforeUnfinished, _ := testutil.GetCounterMetricValue(unfinished)
	next := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "next", Namespace: "ns"}, Spec: api.PodSpec{Containers: []api.Container{container("web", "nginx", nil, nil)}}}
	if err := p.Admit(context.Background(), podAttributes(next), nil); err != nil {
		t.Fatal(err)
	}
	if after, _ := testutil.GetCounterMetricValue(unfinished); after != beforeUnfinished {
		t.Errorf("lookups_unfinished_total went from %v to %v for a remembered failure, want no change", beforeUnfinished, after)
	}
	if after, _ := testutil.GetCounterMetricValue(failures); after != before+1 {
		t.Errorf("source_errors_total went from %v to %v after the remembered failure, want %v", before, after, before+1)
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

// withSpec sets spec.key of a VPA.
func withSpec(u *unstructured.Unstructured, key string, value any) *unstructured.Unstructured {
	u.Object["spec"].(map[string]any)[key] = value
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
	vpaFirst := func(c *portcullisapi.InitialResourcesConfiguration) {
		c.Sources = []portcullisapi.InitialResourcesSourceName{portcullisapi.InitialResourcesSourceVerticalPodAutoscaler, portcullisapi.InitialResourcesSourcePrometheus}
	}
	tests := []struct {
		name           string
		objects        []runtime.Object
		mutate         func(*portcullisapi.InitialResourcesConfiguration)
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
			mutate: func(c *portcullisapi.InitialResourcesConfiguration) {
				vpaFirst(c)
				c.VerticalPodAutoscaler = &portcullisapi.InitialResourcesVerticalPodAutoscaler{Recommendation: portcullisapi.InitialResourcesRecommendationUncappedTarget}
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
			mutate: func(c *portcullisapi.InitialResourcesConfiguration) {
				vpaFirst(c)
				c.Sources[0], c.Sources[1] = c.Sources[1], c.Sources[0]
			},
			podOwner:       [3]string{"apps/v1", "StatefulSet", "web"},
			containers:     []api.Container{container("web", "nginx:1.25", nil, nil)},
			want:           []api.ResourceList{quantities("250m", "67108864")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for container web",
		},
		{
			name:           "a VPA in updateMode Off only recommends: the history",
			objects:        []runtime.Object{withSpec(autoscalerFor("StatefulSet", "web"), "updatePolicy", map[string]any{"updateMode": "Off"})},
			mutate:         vpaFirst,
			podOwner:       [3]string{"apps/v1", "StatefulSet", "web"},
			containers:     []api.Container{container("web", "nginx:1.25", nil, nil)},
			want:           []api.ResourceList{quantities("250m", "67108864")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for container web",
		},
		{
			name: "a container's policy mode Off: that container from the history",
			objects: []runtime.Object{withSpec(autoscalerFor("StatefulSet", "web"), "resourcePolicy", map[string]any{"containerPolicies": []any{
				map[string]any{"containerName": "web", "mode": "Off"}}})},
			mutate:         vpaFirst,
			podOwner:       [3]string{"apps/v1", "StatefulSet", "web"},
			containers:     []api.Container{container("web", "nginx:1.25", nil, nil)},
			want:           []api.ResourceList{quantities("250m", "67108864")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for container web",
		},
		{
			name:           "updateMode Auto: applied",
			objects:        []runtime.Object{withSpec(autoscalerFor("StatefulSet", "web"), "updatePolicy", map[string]any{"updateMode": "Auto"})},
			mutate:         vpaFirst,
			podOwner:       [3]string{"apps/v1", "StatefulSet", "web"},
			containers:     []api.Container{container("web", "nginx:1.25", nil, nil)},
			want:           []api.ResourceList{quantities("300m", "200Mi")},
			wantAnnotation: "Initial Resources plugin set: cpu, memory request for container web from VerticalPodAutoscaler web-vpa",
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
			if err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), podAttributes(pod), nil); err != nil {
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
	p := newTestPlugin(t, nil, func(c *portcullisapi.InitialResourcesConfiguration) {
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

// limitRange is a namespace ns LimitRange of items, defaulted as the server stores it (a
// Container item's max defaults its default limit, which defaults its default request).
func limitRange(name string, items ...corev1.LimitRangeItem) *corev1.LimitRange {
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: items}}
	corev1defaults.SetObjectDefaults_LimitRange(lr)
	return lr
}

func v1List(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

// upstreamLimitRanger is Kubernetes' own LimitRanger over ranges, which runs after the plugin
// in the chain: its Admit (defaults) then its Validate.
func upstreamLimitRanger(t *testing.T, ranges ...*corev1.LimitRange) func(*api.Pod) error {
	t.Helper()
	objects := make([]runtime.Object, len(ranges))
	for i, lr := range ranges {
		objects[i] = lr
	}
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	lr, err := limitranger.NewLimitRanger(&limitranger.DefaultLimitRangerActions{})
	if err != nil {
		t.Fatal(err)
	}
	lr.SetExternalKubeClientSet(client)
	lr.SetExternalKubeInformerFactory(factory)
	if err := lr.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return func(pod *api.Pod) error {
		attrs := podAttributes(pod)
		if err := lr.Admit(context.Background(), attrs, nil); err != nil {
			return err
		}
		return lr.Validate(context.Background(), attrs, nil)
	}
}

// TestFitLimitRanges: with fitLimitRanges, the requests set keep the pod admissible: each
// case's pod is one Kubernetes' own LimitRanger admits without the plugin, and must admit
// with it; the requests set are the estimates moved into what the LimitRanges allow, and
// never zero.
func TestFitLimitRanges(t *testing.T) {
	history := map[string][2]int{"nginx": {50, 512 << 20}, "busybox": {5000, 1 << 20}, "idle": {0, 0}}
	ctr := corev1.LimitTypeContainer
	tests := []struct {
		name       string
		ranges     []*corev1.LimitRange
		containers []api.Container
		want       []api.ResourceList // what the plugin set, before LimitRanger
	}{
		{
			name: "raised to the min, lowered to the max and the default limit",
			ranges: []*corev1.LimitRange{limitRange("limits",
				corev1.LimitRangeItem{Type: ctr, Min: v1List("cpu", "100m"), Max: v1List("cpu", "2"), Default: v1List("memory", "256Mi")})},
			containers: []api.Container{container("web", "nginx", nil, nil), container("batch", "busybox", nil, nil)},
			want:       []api.ResourceList{quantities("100m", "256Mi"), quantities("2", "1048576")},
		},
		{
			name: "maxLimitRequestRatio: raised to the default limit over the ratio",
			ranges: []*corev1.LimitRange{limitRange("ratio",
				corev1.LimitRangeItem{Type: ctr, Default: v1List("cpu", "1", "memory", "1Gi"), MaxLimitRequestRatio: v1List("cpu", "2", "memory", "4")})},
			containers: []api.Container{container("web", "nginx", nil, nil), container("batch", "busybox", nil, nil)},
			want:       []api.ResourceList{quantities("500m", "512Mi"), quantities("1", "256Mi")},
		},
		{
			name: "a ratio that does not divide evenly: rounded up",
			ranges: []*corev1.LimitRange{limitRange("ratio",
				corev1.LimitRangeItem{Type: ctr, Default: v1List("cpu", "1"), MaxLimitRequestRatio: v1List("cpu", "3")})},
			containers: []api.Container{container("web", "nginx", nil, nil)},
			want:       []api.ResourceList{quantities("334m", "536870912")},
		},
		{
			name: "an idle image: nothing set, the namespace's default request stays",
			ranges: []*corev1.LimitRange{limitRange("defaults",
				corev1.LimitRangeItem{Type: ctr, Default: v1List("cpu", "500m"), DefaultRequest: v1List("cpu", "100m"), MaxLimitRequestRatio: v1List("cpu", "10")})},
			containers: []api.Container{container("idle", "idle", nil, nil)},
			want:       []api.ResourceList{nil},
		},
		{
			name: "several LimitRanges: every default limit counts, an empty window sets nothing",
			ranges: []*corev1.LimitRange{
				limitRange("a", corev1.LimitRangeItem{Type: ctr, Default: v1List("cpu", "1"), MaxLimitRequestRatio: v1List("cpu", "2")}),
				limitRange("b", corev1.LimitRangeItem{Type: ctr, Default: v1List("cpu", "400m")})},
			containers: []api.Container{container("web", "nginx", nil, nil)},
			want:       []api.ResourceList{quantities("", "536870912")},
		},
		{
			name: "a Pod max the containers' requests together would exceed: that resource not set",
			ranges: []*corev1.LimitRange{limitRange("pod",
				corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: v1List("memory", "600Mi")})},
			containers: []api.Container{container("web", "nginx", nil, nil), container("cache", "busybox", quantities("", "100Mi"), quantities("", "100Mi"))},
			want:       []api.ResourceList{quantities("50m", ""), quantities("5", "100Mi")},
		},
		{
			name: "a Pod min above the estimate, the namespace's default request meeting it: cpu not set",
			ranges: []*corev1.LimitRange{limitRange("pod-min",
				corev1.LimitRangeItem{Type: ctr, Default: v1List("cpu", "1"), DefaultRequest: v1List("cpu", "500m")},
				corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: v1List("cpu", "250m")})},
			containers: []api.Container{container("web", "nginx", nil, nil)},
			want:       []api.ResourceList{quantities("", "536870912")},
		},
		{
			name: "a Pod maxLimitRequestRatio the estimate breaks, the default request keeping it: cpu not set",
			ranges: []*corev1.LimitRange{limitRange("pod-ratio",
				corev1.LimitRangeItem{Type: ctr, Default: v1List("cpu", "1"), DefaultRequest: v1List("cpu", "500m")},
				corev1.LimitRangeItem{Type: corev1.LimitTypePod, MaxLimitRequestRatio: v1List("cpu", "2")})},
			containers: []api.Container{container("web", "nginx", nil, nil)},
			want:       []api.ResourceList{quantities("", "536870912")},
		},
		{
			name: "a Pod max the requests stay within: set",
			ranges: []*corev1.LimitRange{limitRange("pod",
				corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: v1List("memory", "1Gi")})},
			containers: []api.Container{container("web", "nginx", nil, nil), container("cache", "busybox", quantities("", "100Mi"), quantities("", "100Mi"))},
			want:       []api.ResourceList{quantities("50m", "536870912"), quantities("5", "100Mi")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPlugin(t, historyOf(history), func(c *portcullisapi.InitialResourcesConfiguration) { c.FitLimitRanges = ptr.To(true) })
			objects := make([]runtime.Object, len(tc.ranges))
			for i, lr := range tc.ranges {
				objects[i] = lr
			}
			factory := informers.NewSharedInformerFactory(fake.NewClientset(objects...), 0)
			p.SetExternalKubeInformerFactory(factory)
			if err := p.ValidateInitialization(); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			factory.Start(stop)
			factory.WaitForCacheSync(stop)
			limitRanger := upstreamLimitRanger(t, tc.ranges...)

			newPod := func() *api.Pod {
				return &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"}, Spec: api.PodSpec{Containers: slices.Clone(tc.containers)}}
			}
			if err := limitRanger(newPod()); err != nil {
				t.Fatalf("the case is wrong: LimitRanger refuses the pod without the plugin: %v", err)
			}
			pod := newPod()
			for i := range pod.Spec.Containers {
				pod.Spec.Containers[i].Resources = *pod.Spec.Containers[i].Resources.DeepCopy()
			}
			if err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), podAttributes(pod), nil); err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.want {
				if diff := cmp.Diff(want, pod.Spec.Containers[i].Resources.Requests, quantityEqual); diff != "" {
					t.Errorf("container %d requests (-want +got):\n%s", i, diff)
				}
			}
			if err := limitRanger(pod); err != nil {
				t.Errorf("LimitRanger refuses the pod the plugin changed, and admits it unchanged: %v", err)
			}
		})
	}
}

// TestFitLimitRangesBeforeTheyAreListed: until the LimitRanges are listed, no estimate is set
// (it could not be kept within them), and the pod is not held waiting.
func TestFitLimitRangesBeforeTheyAreListed(t *testing.T) {
	p := newTestPlugin(t, historyOf(map[string][2]int{"nginx": {50, 512 << 20}}), func(c *portcullisapi.InitialResourcesConfiguration) {
		c.FitLimitRanges = ptr.To(true)
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

// TestAdmitReinvokedAfterAWebhook: run again after a webhook added a container, the plugin
// sets the new container's requests and keeps the record of what its first run set.
func TestAdmitReinvokedAfterAWebhook(t *testing.T) {
	p := newTestPlugin(t, historyOf(map[string][2]int{"nginx:1.25": {250, 64 << 20}, "busybox": {10, 1 << 20}}), nil)
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"}, Spec: api.PodSpec{Containers: []api.Container{container("web", "nginx:1.25", nil, nil)}}}
	attrs := podAttributes(pod)
	if err := p.Admit(context.Background(), attrs, nil); err != nil {
		t.Fatal(err)
	}
	// A sidecar injector's webhook adds a container; the server runs the plugin again.
	pod.Spec.Containers = append(pod.Spec.Containers, container("proxy", "busybox", nil, nil))
	attrs.GetReinvocationContext().SetIsReinvoke()
	if err := p.Admit(context.Background(), attrs, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(quantities("10m", "1048576"), pod.Spec.Containers[1].Resources.Requests, quantityEqual); diff != "" {
		t.Errorf("the sidecar's requests (-want +got):\n%s", diff)
	}
	want := "Initial Resources plugin set: cpu, memory request for container web; cpu, memory request for container proxy"
	if got := pod.Annotations[Annotation]; got != want {
		t.Errorf("annotation %q, want %q", got, want)
	}
}

// TestAdmitClusterTiersOncePerImage: the histories of any namespace are read once for an
// image, however many namespaces' pods need them.
func TestAdmitClusterTiersOncePerImage(t *testing.T) {
	img, _ := parseImage("nginx:1.25")
	h := &fakeHistory{samples: map[historyQuery][]float64{
		{api.ResourceCPU, img.key, true, "", week}:    scaled(250),
		{api.ResourceMemory, img.key, true, "", week}: scaled(64 << 20),
	}}
	p := newTestPlugin(t, h, nil)
	for _, ns := range []string{"a", "b", "c"} {
		pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: ns}, Spec: api.PodSpec{Containers: []api.Container{container("web", "nginx:1.25", nil, nil)}}}
		if err := p.Admit(context.Background(), podAttributes(pod), nil); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(quantities("250m", "67108864"), pod.Spec.Containers[0].Resources.Requests, quantityEqual); diff != "" {
			t.Errorf("namespace %s: requests (-want +got):\n%s", ns, diff)
		}
	}
	cluster := 0
	for _, q := range h.queries() {
		if q.namespace == "" {
			cluster++
		}
	}
	// One query per resource: the image anywhere over the short window has enough.
	if cluster != 2 {
		t.Errorf("%d queries of any namespace for three namespaces' pods, want 2 (one per resource, once)", cluster)
	}
}

// TestComputationTimeoutCountsChunks: a computation may take as long as every range query
// it may send, a window read in several chunks counting each.
func TestComputationTimeoutCountsChunks(t *testing.T) {
	tests := []struct {
		name                string
		step                time.Duration
		namespaceOnly       bool
		wantNS, wantCluster time.Duration
	}{
		// 7 days at 5m is 2,017 points, 30 days 8,641: one query each. Namespace: 2
		// resources × (week + month); cluster: 2 × (week + month + month); the namespace's
		// computation may wait for the cluster's.
		{name: "one chunk a window", step: 5 * time.Minute, wantNS: 4*10*time.Second + 6*10*time.Second, wantCluster: 6 * 10 * time.Second},
		// At 1m: a week is 10,081 points (one query), a month 43,201 (four).
		{name: "a month in four chunks", step: time.Minute, wantNS: 2*(1+4)*10*time.Second + 2*(1+4+4)*10*time.Second, wantCluster: 2 * (1 + 4 + 4) * 10 * time.Second},
		{name: "namespace only: no cluster tiers", step: time.Minute, namespaceOnly: true, wantNS: 2 * (1 + 4 + 4) * 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &portcullisapi.InitialResourcesConfiguration{
				Sources:       []portcullisapi.InitialResourcesSourceName{portcullisapi.InitialResourcesSourcePrometheus},
				Prometheus:    &portcullisapi.InitialResourcesPrometheus{URL: "http://prometheus.invalid", Step: &metav1.Duration{Duration: tc.step}},
				NamespaceOnly: tc.namespaceOnly,
			}
			setDefaults(t, cfg)
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if p.history.timeout != tc.wantNS {
				t.Errorf("the namespace's computation may take %s, want %s", p.history.timeout, tc.wantNS)
			}
			if tc.namespaceOnly != (p.cluster == nil) {
				t.Fatalf("cluster cache %v with namespaceOnly %t", p.cluster, tc.namespaceOnly)
			}
			if p.cluster != nil && p.cluster.timeout != tc.wantCluster {
				t.Errorf("the cluster's computation may take %s, want %s", p.cluster.timeout, tc.wantCluster)
			}
		})
	}
}

// TestAdmitFloodOfImages: pods any creator may send (dry runs of distinct, huge or
// unparsable image strings) keep the plugin within its bounds: nothing kept for what is not
// an image, the caches within their limits, and with the source stuck, no more goroutines
// than the caches' queued limits however many images arrive.
func TestAdmitFloodOfImages(t *testing.T) {
	tests := []struct {
		name        string
		image       func(i int) string
		stuck       bool
		wantEntries int // the most entries kept
		wantShed    bool
	}{
		{name: "unparsable images: nothing kept, nothing asked", image: func(i int) string { return fmt.Sprintf("Not An Image %d", i) }},
		{name: "image strings longer than any reference: nothing kept, nothing asked",
			image: func(i int) string { return fmt.Sprintf("registry.local/%s:%d", strings.Repeat("a", 2000), i) }},
		{name: "distinct images, the source stuck: lookups shed, goroutines bounded", image: func(i int) string { return fmt.Sprintf("registry.local/app-%d:1", i) },
			stuck: true, wantEntries: defaultLimits.queued / defaultLimits.share, wantShed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := historyOf(nil)
			if tc.stuck {
				h.release = make(chan struct{})
			}
			p := newTestPlugin(t, h, func(c *portcullisapi.InitialResourcesConfiguration) {
				c.MissWait = &metav1.Duration{Duration: 0}
			})
			shedCounter := lookupsShed.WithLabelValues("Prometheus")
			shedBefore, _ := testutil.GetCounterMetricValue(shedCounter)
			goroutines := goruntime.NumGoroutine()
			for i := range 2000 {
				pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"}, Spec: api.PodSpec{Containers: []api.Container{container("c", tc.image(i), nil, nil)}}}
				if err := p.Admit(context.Background(), podAttributes(pod), nil); err != nil {
					t.Fatal(err)
				}
				// Each cache's queued computations are each one goroutine.
				if extra := goruntime.NumGoroutine() - goroutines; extra > 2*defaultLimits.queued {
					t.Fatalf("after %d pods, %d goroutines more than before, want at most %d", i+1, extra, 2*defaultLimits.queued)
				}
			}
			u := p.history.usage()
			if u.entries > tc.wantEntries || u.bytes > defaultLimits.bytes {
				t.Errorf("%d entries of %d bytes kept, want at most %d entries", u.entries, u.bytes, tc.wantEntries)
			}
			if !tc.stuck && len(h.queries()) != 0 {
				t.Errorf("%d queries for what is no image, want none", len(h.queries()))
			}
			shedAfter, _ := testutil.GetCounterMetricValue(shedCounter)
			if tc.wantShed != (shedAfter > shedBefore) {
				t.Errorf("lookups_shed_total went from %v to %v; want an increase: %t", shedBefore, shedAfter, tc.wantShed)
			}
			if tc.stuck {
				close(h.release)
				waitFor(t, "the stuck lookups to finish", func() bool {
					return p.history.usage().inflight+p.cluster.usage().inflight == 0
				})
			}
		})
	}
}

// TestSpellingsOfOneImageShareAnEntry: the caches are keyed by the normalized reference,
// so the spellings of one image are looked up once, and a flood cannot multiply its entries
// by respelling an image.
func TestSpellingsOfOneImageShareAnEntry(t *testing.T) {
	h := historyOf(map[string][2]int{"nginx": {250, 64 << 20}})
	p := newTestPlugin(t, h, nil)
	for _, written := range []string{"nginx", "nginx:latest", "docker.io/library/nginx", "docker.io/library/nginx:latest", "library/nginx"} {
		pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"}, Spec: api.PodSpec{Containers: []api.Container{container("web", written, nil, nil)}}}
		if err := p.Admit(context.Background(), podAttributes(pod), nil); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(quantities("250m", "67108864"), pod.Spec.Containers[0].Resources.Requests, quantityEqual); diff != "" {
			t.Errorf("%s: requests (-want +got):\n%s", written, diff)
		}
	}
	if u := p.history.usage(); u.entries != 1 {
		t.Errorf("%d entries for five spellings of one image, want 1", u.entries)
	}
	if n := len(h.queries()); n != 2 {
		t.Errorf("%d queries for five spellings of one image, want 2 (one per resource, once)", n)
	}
}
