package podpreset

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	admissiontesting "k8s.io/apiserver/pkg/admission/testing"
	"k8s.io/apiserver/pkg/warning"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	api "k8s.io/kubernetes/pkg/apis/core"

	settingsv1alpha1 "github.com/portcullis-k8s/api/settings/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
)

// newPreset returns a PodPreset in namespace "ns" selecting role=frontend.
func newPreset(name string, mutate func(*settingsv1alpha1.PodPresetSpec)) *settingsv1alpha1.PodPreset {
	pp := &settingsv1alpha1.PodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "rv-" + name, UID: types.UID("uid-" + name)},
		Spec: settingsv1alpha1.PodPresetSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "frontend"}},
		},
	}
	if mutate != nil {
		mutate(&pp.Spec)
	}
	return pp
}

func withEnv(name, value string) func(*settingsv1alpha1.PodPresetSpec) {
	return func(s *settingsv1alpha1.PodPresetSpec) {
		s.Env = append(s.Env, corev1.EnvVar{Name: name, Value: value})
	}
}

func withCache(volume, path string) func(*settingsv1alpha1.PodPresetSpec) {
	return func(s *settingsv1alpha1.PodPresetSpec) {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		s.VolumeMounts = append(s.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: path})
	}
}

func newPod(mutate func(*api.Pod)) *api.Pod {
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"role": "frontend"}},
		Spec: api.PodSpec{
			InitContainers:      []api.Container{{Name: "init"}},
			Containers:          []api.Container{{Name: "app"}},
			EphemeralContainers: []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug"}}},
		},
	}
	if mutate != nil {
		mutate(pod)
	}
	return pod
}

// newTestPlugin returns a ready plugin whose informer holds presets.
func newTestPlugin(t testing.TB, presets ...*settingsv1alpha1.PodPreset) (*Plugin, *record.FakeRecorder) {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, presetIndexers())
	for _, pp := range presets {
		compiled, err := compile(pp)
		if err != nil {
			t.Fatal(err)
		}
		if err := indexer.Add(compiled); err != nil {
			t.Fatal(err)
		}
	}
	recorder := record.NewFakeRecorder(100)
	p := New()
	p.presets = indexer
	p.recorder = recorder
	p.ready = func() bool { return true }
	return p, recorder
}

type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

func admit(t testing.TB, p *Plugin, obj runtime.Object, resource, subresource string, op admission.Operation) (error, []string) {
	t.Helper()
	return admitRequest(t, p, obj, resource, subresource, op, false)
}

func admitRequest(t testing.TB, p *Plugin, obj runtime.Object, resource, subresource string, op admission.Operation, dryRun bool) (error, []string) {
	t.Helper()
	var w warnings
	ctx := warning.WithWarningRecorder(context.Background(), &w)
	attrs := admission.NewAttributesRecord(obj, nil, api.Kind("Pod").WithVersion("v1"), "ns", "web",
		api.Resource(resource).WithVersion("v1"), subresource, op, nil, dryRun, nil)
	var plugin admission.MutationInterface = p
	if tt, ok := t.(*testing.T); ok {
		// Upstream's tester runs the plugin twice on the request, as the server does when a
		// webhook changed the pod, and fails the test unless the second run changes nothing.
		plugin = admissiontesting.WithReinvocationTesting(tt, p)
	}
	return plugin.Admit(ctx, attrs, nil), w
}

func TestMatchingAndMerge(t *testing.T) {
	emptyDir := api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}
	tests := []struct {
		name    string
		presets []*settingsv1alpha1.PodPreset
		pod     *api.Pod
		// want is the pod after admission; nil means unchanged.
		want func(*api.Pod)
	}{
		{
			name: "the documentation's example",
			presets: []*settingsv1alpha1.PodPreset{newPreset("allow-database", func(s *settingsv1alpha1.PodPresetSpec) {
				withEnv("DB_PORT", "6379")(s)
				withCache("cache-volume", "/cache")(s)
			})},
			pod: newPod(nil),
			want: func(p *api.Pod) {
				p.Annotations = map[string]string{AppliedAnnotationPrefix + "allow-database": "rv-allow-database"}
				p.Spec.Volumes = []api.Volume{{Name: "cache-volume", VolumeSource: emptyDir}}
				for _, c := range []*api.Container{&p.Spec.InitContainers[0], &p.Spec.Containers[0]} {
					c.Env = []api.EnvVar{{Name: "DB_PORT", Value: "6379"}}
					c.VolumeMounts = []api.VolumeMount{{Name: "cache-volume", MountPath: "/cache"}}
				}
			},
		},
		{
			name:    "a pod the selector does not match is untouched",
			presets: []*settingsv1alpha1.PodPreset{newPreset("p", withEnv("A", "1"))},
			pod:     newPod(func(p *api.Pod) { p.Labels = map[string]string{"role": "backend"} }),
		},
		{
			name: "an empty selector matches every pod",
			presets: []*settingsv1alpha1.PodPreset{newPreset("all", func(s *settingsv1alpha1.PodPresetSpec) {
				s.Selector = metav1.LabelSelector{}
				withEnv("A", "1")(s)
			})},
			pod: newPod(func(p *api.Pod) { p.Labels = nil }),
			want: func(p *api.Pod) {
				p.Annotations = map[string]string{AppliedAnnotationPrefix + "all": "rv-all"}
				p.Spec.InitContainers[0].Env = []api.EnvVar{{Name: "A", Value: "1"}}
				p.Spec.Containers[0].Env = []api.EnvVar{{Name: "A", Value: "1"}}
			},
		},
		{
			name: "presets of another namespace do not apply",
			presets: []*settingsv1alpha1.PodPreset{func() *settingsv1alpha1.PodPreset {
				pp := newPreset("elsewhere", withEnv("A", "1"))
				pp.Namespace = "other"
				return pp
			}()},
			pod: newPod(nil),
		},
		{
			name: "matchExpressions select too",
			presets: []*settingsv1alpha1.PodPreset{newPreset("expr", func(s *settingsv1alpha1.PodPresetSpec) {
				s.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "role", Operator: metav1.LabelSelectorOpIn, Values: []string{"frontend", "edge"}}}}
				withEnv("A", "1")(s)
			})},
			pod: newPod(nil),
			want: func(p *api.Pod) {
				p.Annotations = map[string]string{AppliedAnnotationPrefix + "expr": "rv-expr"}
				p.Spec.InitContainers[0].Env = []api.EnvVar{{Name: "A", Value: "1"}}
				p.Spec.Containers[0].Env = []api.EnvVar{{Name: "A", Value: "1"}}
			},
		},
		{
			name: "several presets apply in name order, envFrom included",
			presets: []*settingsv1alpha1.PodPreset{
				newPreset("b", withEnv("B", "2")),
				newPreset("a", func(s *settingsv1alpha1.PodPresetSpec) {
					withEnv("A", "1")(s)
					s.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
				}),
			},
			pod: newPod(nil),
			want: func(p *api.Pod) {
				p.Annotations = map[string]string{AppliedAnnotationPrefix + "a": "rv-a", AppliedAnnotationPrefix + "b": "rv-b"}
				for _, c := range []*api.Container{&p.Spec.InitContainers[0], &p.Spec.Containers[0]} {
					c.Env = []api.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}
					c.EnvFrom = []api.EnvFromSource{{ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "settings"}}}}
				}
			},
		},
		{
			name: "identical duplicates are skipped, in the pod and between presets",
			presets: []*settingsv1alpha1.PodPreset{
				newPreset("a", func(s *settingsv1alpha1.PodPresetSpec) { withEnv("A", "1")(s); withCache("cache", "/cache")(s) }),
				newPreset("b", func(s *settingsv1alpha1.PodPresetSpec) { withEnv("A", "1")(s); withCache("cache", "/cache")(s) }),
			},
			pod: newPod(func(p *api.Pod) {
				p.Spec.Containers[0].Env = []api.EnvVar{{Name: "A", Value: "1"}}
				p.Spec.Volumes = []api.Volume{{Name: "cache", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}}}
			}),
			want: func(p *api.Pod) {
				p.Annotations = map[string]string{AppliedAnnotationPrefix + "a": "rv-a", AppliedAnnotationPrefix + "b": "rv-b"}
				for _, c := range []*api.Container{&p.Spec.InitContainers[0], &p.Spec.Containers[0]} {
					c.Env = []api.EnvVar{{Name: "A", Value: "1"}}
					c.VolumeMounts = []api.VolumeMount{{Name: "cache", MountPath: "/cache"}}
				}
			},
		},
		{
			name:    "an excluded pod is untouched",
			presets: []*settingsv1alpha1.PodPreset{newPreset("p", withEnv("A", "1"))},
			pod:     newPod(func(p *api.Pod) { p.Annotations = map[string]string{ExcludeAnnotation: "true"} }),
		},
		{
			name:    "a mirror pod is untouched",
			presets: []*settingsv1alpha1.PodPreset{newPreset("p", withEnv("A", "1"))},
			pod:     newPod(func(p *api.Pod) { p.Annotations = map[string]string{api.MirrorPodAnnotationKey: "hash"} }),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, recorder := newTestPlugin(t, tc.presets...)
			pod := tc.pod.DeepCopy()
			err, warned := admit(t, p, pod, "pods", "", admission.Create)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.pod.DeepCopy()
			if tc.want != nil {
				tc.want(want)
			}
			if diff := cmp.Diff(want, pod); diff != "" {
				t.Errorf("pod after admission (-want +got):\n%s", diff)
			}
			if len(warned) != 0 || len(recorder.Events) != 0 {
				t.Errorf("unexpected warnings %v / %d events", warned, len(recorder.Events))
			}
		})
	}
}

func TestConflicts(t *testing.T) {
	otherDir := api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/var/cache"}}
	tests := []struct {
		name    string
		presets []*settingsv1alpha1.PodPreset
		pod     *api.Pod
		want    []string
	}{
		{
			name:    "env var in a container",
			presets: []*settingsv1alpha1.PodPreset{newPreset("db", withEnv("DB_PORT", "6379"))},
			pod:     newPod(func(p *api.Pod) { p.Spec.Containers[0].Env = []api.EnvVar{{Name: "DB_PORT", Value: "5432"}} }),
			want:    []string{`podpreset "db": env var "DB_PORT" differs from container "app"'s own`},
		},
		{
			name:    "env var in an init container",
			presets: []*settingsv1alpha1.PodPreset{newPreset("db", withEnv("DB_PORT", "6379"))},
			pod:     newPod(func(p *api.Pod) { p.Spec.InitContainers[0].Env = []api.EnvVar{{Name: "DB_PORT", Value: "5432"}} }),
			want:    []string{`podpreset "db": env var "DB_PORT" differs from container "init"'s own`},
		},
		{
			name:    "pod volume",
			presets: []*settingsv1alpha1.PodPreset{newPreset("cache", withCache("cache", "/cache"))},
			pod:     newPod(func(p *api.Pod) { p.Spec.Volumes = []api.Volume{{Name: "cache", VolumeSource: otherDir}} }),
			want:    []string{`podpreset "cache": volume "cache" differs from the pod's own`},
		},
		{
			name:    "volumeMount with the same name",
			presets: []*settingsv1alpha1.PodPreset{newPreset("cache", withCache("cache", "/cache"))},
			pod: newPod(func(p *api.Pod) {
				p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "cache", MountPath: "/elsewhere"}}
			}),
			want: []string{`podpreset "cache": volumeMount "cache" differs from container "app"'s own`},
		},
		{
			name:    "volumeMount on the same mountPath",
			presets: []*settingsv1alpha1.PodPreset{newPreset("cache", withCache("cache", "/cache"))},
			pod: newPod(func(p *api.Pod) {
				p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "data", MountPath: "/cache"}}
			}),
			want: []string{`podpreset "cache": volumeMount at "/cache" differs from container "app"'s own`},
		},
		{
			name:    "volumeMount naming a volumeDevice",
			presets: []*settingsv1alpha1.PodPreset{newPreset("cache", withCache("block", "/cache"))},
			pod: newPod(func(p *api.Pod) {
				p.Spec.Containers[0].VolumeDevices = []api.VolumeDevice{{Name: "block", DevicePath: "/dev/xvda"}}
			}),
			want: []string{`podpreset "cache": volumeMount "block" names a volumeDevice of container "app"`},
		},
		{
			name:    "volumeMount on a devicePath",
			presets: []*settingsv1alpha1.PodPreset{newPreset("cache", withCache("cache", "/dev/xvda"))},
			pod: newPod(func(p *api.Pod) {
				p.Spec.Containers[0].VolumeDevices = []api.VolumeDevice{{Name: "block", DevicePath: "/dev/xvda"}}
			}),
			want: []string{`podpreset "cache": volumeMount at "/dev/xvda" is a devicePath of container "app"`},
		},
		{
			name:    "two presets disagree on an env var",
			presets: []*settingsv1alpha1.PodPreset{newPreset("a", withEnv("MODE", "fast")), newPreset("b", withEnv("MODE", "safe"))},
			pod:     newPod(nil),
			want:    []string{`podpreset "b": env var "MODE" differs from podpreset "a"'s`},
		},
		{
			name: "two presets disagree on a volume",
			presets: []*settingsv1alpha1.PodPreset{
				newPreset("a", withCache("cache", "/cache")),
				newPreset("b", func(s *settingsv1alpha1.PodPresetSpec) {
					s.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}}}
				}),
			},
			pod:  newPod(nil),
			want: []string{`podpreset "b": volume "cache" differs from podpreset "a"'s`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, recorder := newTestPlugin(t, tc.presets...)
			pod := tc.pod.DeepCopy()
			err, warned := admit(t, p, pod, "pods", "", admission.Create)
			if err != nil {
				t.Fatalf("a conflict must not reject the pod: %v", err)
			}
			if diff := cmp.Diff(tc.pod, pod); diff != "" {
				t.Errorf("pod changed despite a conflict (-before +after):\n%s", diff)
			}
			if len(warned) != 1 {
				t.Fatalf("want one warning, got %v", warned)
			}
			for _, want := range tc.want {
				if !strings.Contains(warned[0], want) {
					t.Errorf("warning %q does not say %q", warned[0], want)
				}
			}
			for _, pp := range tc.presets {
				if !strings.Contains(warned[0], pp.Name) {
					t.Errorf("warning %q does not name preset %s", warned[0], pp.Name)
				}
			}
			if got := len(recorder.Events); got != len(tc.presets) {
				t.Fatalf("want one event per matching preset (%d), got %d", len(tc.presets), got)
			}
			event := <-recorder.Events
			if !strings.HasPrefix(event, "Warning "+ConflictReason+" ") {
				t.Errorf("event %q is not a %s warning", event, ConflictReason)
			}
		})
	}
}

func TestIgnoredRequests(t *testing.T) {
	p, _ := newTestPlugin(t, newPreset("p", withEnv("A", "1")))
	for _, tc := range []struct {
		resource, subresource string
		op                    admission.Operation
	}{
		{"pods", "", admission.Update},
		{"pods", "ephemeralcontainers", admission.Update},
		{"pods", "status", admission.Create},
		{"configmaps", "", admission.Create},
	} {
		t.Run(fmt.Sprintf("%s/%s %s", tc.resource, tc.subresource, tc.op), func(t *testing.T) {
			pod := newPod(nil)
			err, _ := admit(t, p, pod, tc.resource, tc.subresource, tc.op)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(newPod(nil), pod); diff != "" {
				t.Errorf("pod changed:\n%s", diff)
			}
		})
	}
	// UPDATE is handled for presets only (validation); a pod UPDATE is ignored above.
	if p.Handles(admission.Delete) || p.Handles(admission.Connect) || !p.Handles(admission.Create) || !p.Handles(admission.Update) {
		t.Error("the plugin must handle CREATE and UPDATE only")
	}
}

func TestBadObject(t *testing.T) {
	p, _ := newTestPlugin(t)
	err, _ := admit(t, p, &api.ConfigMap{}, "pods", "", admission.Create)
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("want 400, got %v", err)
	}
}

func TestNotReadyRefuses(t *testing.T) {
	p, _ := newTestPlugin(t, newPreset("p", withEnv("A", "1")))
	p.ready = func() bool { return false }
	p.readyTimeout = time.Millisecond
	err, _ := admit(t, p, newPod(nil), "pods", "", admission.Create)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not yet ready") {
		t.Fatalf("want the not-ready refusal, got %v", err)
	}
}

func TestCompileDefaultsLikeAPod(t *testing.T) {
	pp := newPreset("p", func(s *settingsv1alpha1.PodPresetSpec) {
		s.Env = []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
	})
	compiled, err := compile(pp)
	if err != nil {
		t.Fatal(err)
	}
	if got := compiled.env[0].ValueFrom.FieldRef.APIVersion; got != "v1" {
		t.Errorf("fieldRef.apiVersion = %q, want the pod default v1", got)
	}
	if pp.Spec.Env[0].ValueFrom.FieldRef.APIVersion != "" {
		t.Error("compile modified the informer's object")
	}
}

func TestCRD(t *testing.T) {
	crd, err := CRD()
	if err != nil {
		t.Fatal(err)
	}
	if got := crd.Annotations["api-approved.kubernetes.io"]; !strings.HasPrefix(got, "unapproved, ") {
		t.Errorf("api-approved annotation %q must start with \"unapproved, \"", got)
	}
	again, err := CRD()
	if err != nil {
		t.Fatal(err)
	}
	if crd.Annotations[SchemaHashAnnotation] == "" || crd.Annotations[SchemaHashAnnotation] != again.Annotations[SchemaHashAnnotation] {
		t.Errorf("schema hash is not stable: %q vs %q", crd.Annotations[SchemaHashAnnotation], again.Annotations[SchemaHashAnnotation])
	}
	// The API server's own CRD validation: a structural schema, CEL rules that compile
	// within the cost budget, the approval annotation.
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
		t.Fatal(err)
	}
	internal.Status.StoredVersions = []string{"v1alpha1"} // set by the server on create
	if errs := apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), &internal); len(errs) != 0 {
		t.Fatalf("the API server would refuse the CRD: %v", errs.ToAggregate())
	}
	volumeSchema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["volumes"].Items.Schema
	for _, source := range []string{"emptyDir", "configMap", "secret", "hostPath", "persistentVolumeClaim", "projected"} {
		if _, ok := volumeSchema.Properties[source]; !ok {
			t.Errorf("volume schema lacks %s", source)
		}
	}
}

// BenchmarkAdmit measures admission of a pod in a namespace holding n presets, one of which
// matches it. Each operation deep-copies the pod first, since applying presets changes it;
// the pod-deep-copy-alone case measures that copy, for subtraction.
func BenchmarkAdmit(b *testing.B) {
	b.Run("pod-deep-copy-alone", func(b *testing.B) {
		template := newPod(func(p *api.Pod) { p.Labels = map[string]string{"app": "app-0"} })
		b.ReportAllocs()
		for b.Loop() {
			if template.DeepCopy() == nil {
				b.Fatal("DeepCopy returned nil")
			}
		}
	})
	typical := func(s *settingsv1alpha1.PodPresetSpec) {
		withEnv("DB_PORT", "6379")(s)
		withCache("cache-volume", "/cache")(s)
	}
	// A preset at the CRD's size caps for env vars, the largest list a preset may hold.
	atSizeCaps := func(s *settingsv1alpha1.PodPresetSpec) {
		for i := range maxEnv {
			withEnv(fmt.Sprintf("VAR_%04d", i), "value")(s)
		}
	}
	for _, tc := range []struct {
		name     string
		presets  int
		contents func(*settingsv1alpha1.PodPresetSpec)
	}{
		{"checked-apply/presets=1", 1, typical},
		{"checked-apply/presets=100", 100, typical},
		{"checked-apply/presets=1000", 1000, typical},
		{fmt.Sprintf("checked-apply/presets=1,env=%d", maxEnv), 1, atSizeCaps},
	} {
		b.Run(tc.name, func(b *testing.B) {
			presets := make([]*settingsv1alpha1.PodPreset, tc.presets)
			for i := range presets {
				presets[i] = newPreset(fmt.Sprintf("preset-%04d", i), func(s *settingsv1alpha1.PodPresetSpec) {
					s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", i)}}
					tc.contents(s)
				})
			}
			p, _ := newTestPlugin(b, presets...)
			template := newPod(func(p *api.Pod) { p.Labels = map[string]string{"app": "app-0"} })
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				pod := template.DeepCopy()
				attrs := admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), "ns", "web",
					api.Resource("pods").WithVersion("v1"), "", admission.Create, nil, false, nil)
				if err := p.Admit(ctx, attrs, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAdmitUnchanged measures the requests that leave the pod as it is: those the
// plugin ignores, and a pod it checks against the namespace's presets when none matches.
func BenchmarkAdmitUnchanged(b *testing.B) {
	presets := make([]*settingsv1alpha1.PodPreset, 10)
	for i := range presets {
		presets[i] = newPreset(fmt.Sprintf("preset-%02d", i), func(s *settingsv1alpha1.PodPresetSpec) {
			s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", i)}}
			withEnv("DB_PORT", "6379")(s)
		})
	}
	p, _ := newTestPlugin(b, presets...)
	unmatched := newPod(func(p *api.Pod) { p.Labels = map[string]string{"app": "other"} })
	excluded := newPod(func(p *api.Pod) {
		p.Labels = map[string]string{"app": "app-0"}
		p.Annotations = map[string]string{ExcludeAnnotation: "true"}
	})
	configMap := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	for _, tc := range []struct {
		name     string
		obj      runtime.Object
		resource string
	}{
		{"ignored-configmap", configMap, "configmaps"},
		{"ignored-excluded-pod", excluded, "pods"},
		{"checked-no-preset-matches/presets=10", unmatched, "pods"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			attrs := admission.NewAttributesRecord(tc.obj, nil, api.Kind("Pod").WithVersion("v1"), "ns", "web",
				api.Resource(tc.resource).WithVersion("v1"), "", admission.Create, nil, false, nil)
			before := tc.obj.DeepCopyObject()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Admit(ctx, attrs, nil); err != nil {
					b.Fatal(err)
				}
			}
			if diff := cmp.Diff(before, tc.obj); diff != "" {
				b.Fatalf("the object changed:\n%s", diff)
			}
		})
	}
}

func TestEnsureCRD(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := dynamicfake.NewSimpleDynamicClient(scheme)
	ctx := context.Background()
	writes := func() []string {
		var verbs []string
		for _, a := range client.Actions() {
			if a.GetVerb() != "get" {
				verbs = append(verbs, a.GetVerb())
			}
		}
		client.ClearActions()
		return verbs
	}

	if _, err := ensureCRD(ctx, client, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"create"}, writes()); diff != "" {
		t.Errorf("first install (-want +got):\n%s", diff)
	}
	if _, err := ensureCRD(ctx, client, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if got := writes(); len(got) != 0 {
		t.Errorf("an up-to-date CRD was written again: %v", got)
	}

	// Another release's CRD: replaced only when it is older than ours: of an older
	// Kubernetes minor, or of ours with an older schema version.
	ourMinor := version.MustParseGeneric(kubecompat.Minor)
	olderMinor := fmt.Sprintf("%d.%d", ourMinor.Major(), ourMinor.Minor()-1)
	newerMinor := fmt.Sprintf("%d.%d", ourMinor.Major(), ourMinor.Minor()+1)
	ourCRD, err := CRD()
	if err != nil {
		t.Fatal(err)
	}
	// Written by an earlier release, without a version: a 1.37 server's, schema version 0.
	var earlierRelease []string
	if !version.MustParseGeneric(unannotatedMinor).GreaterThan(ourMinor) {
		earlierRelease = []string{"update"}
	}
	for _, tc := range []struct {
		name           string
		version, minor *string
		sameHash       bool
		want           []string
	}{
		{"an earlier release's, without a version", nil, nil, false, earlierRelease},
		{"an older version", ptr(strconv.Itoa(SchemaVersion - 1)), ptr(kubecompat.Minor), false, []string{"update"}},
		{"a version that is not a number", ptr("one"), ptr(kubecompat.Minor), false, []string{"update"}},
		{"the same version, another hash", ptr(strconv.Itoa(SchemaVersion)), ptr(kubecompat.Minor), false, nil},
		{"a newer version", ptr(strconv.Itoa(SchemaVersion + 1)), ptr(kubecompat.Minor), false, nil},
		{"an older minor's, a newer version", ptr(strconv.Itoa(SchemaVersion + 1)), ptr(olderMinor), false, []string{"update"}},
		{"a newer minor's, an older version", ptr(strconv.Itoa(SchemaVersion - 1)), ptr(newerMinor), false, nil},
		{"a minor that is not a version", ptr(strconv.Itoa(SchemaVersion)), ptr("next"), false, []string{"update"}},
		// Without the minor annotation: written by a 1.37 server, as new as any of this
		// schema version.
		{"the same version, without a minor (1.37's)", ptr(strconv.Itoa(SchemaVersion)), nil, false, nil},
		{"our schema, written by an older minor", ptr(strconv.Itoa(SchemaVersion)), ptr(olderMinor), true, []string{"update"}},
		{"our schema, written by a newer minor", ptr(strconv.Itoa(SchemaVersion)), ptr(newerMinor), true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stale, err := client.Resource(crdResource).Get(ctx, CRDName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			annotations := map[string]string{SchemaHashAnnotation: "another"}
			if tc.sameHash {
				annotations[SchemaHashAnnotation] = ourCRD.Annotations[SchemaHashAnnotation]
			}
			if tc.version != nil {
				annotations[SchemaVersionAnnotation] = *tc.version
			}
			if tc.minor != nil {
				annotations[SchemaKubernetesMinorAnnotation] = *tc.minor
			}
			stale.SetAnnotations(annotations)
			if _, err := client.Resource(crdResource).Update(ctx, stale, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			client.ClearActions()
			for range 2 {
				if _, err := ensureCRD(ctx, client, logr.Discard()); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, writes()); diff != "" {
				t.Errorf("writes over two checks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSchemaVersionPinsTheSchema: the schema version must be raised with every change of
// the CRD, or a release with the change would never replace an older release's CRD (same
// version), and two releases with different CRDs of one version would both leave it alone.
// The schema holds the minor's pod types, so each minor pins its own hashes. After raising
// SchemaVersion, add its hash for every minor here.
func TestSchemaVersionPinsTheSchema(t *testing.T) {
	hashes := map[string]map[int]string{
		"1.35": {1: "6753157804a06a36"},
		"1.36": {1: "55b0526824b5ea48"},
		"1.37": {1: "fd1f2a22b3183322"},
	}
	crd, err := CRD()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := crd.Annotations[SchemaHashAnnotation], hashes[kubecompat.Minor][SchemaVersion]; got != want {
		t.Errorf("the CRD's schema hash on Kubernetes %s is %s, but schema version %d pins %q: raise SchemaVersion and pin the new hash", kubecompat.Minor, got, SchemaVersion, want)
	}
	if got := crd.Annotations[SchemaKubernetesMinorAnnotation]; got != kubecompat.Minor {
		t.Errorf("the CRD's minor annotation is %q, want %s", got, kubecompat.Minor)
	}
	if got := crd.Annotations[SchemaVersionAnnotation]; got != strconv.Itoa(SchemaVersion) {
		t.Errorf("the CRD's schema version annotation is %q, want %d", got, SchemaVersion)
	}
}
