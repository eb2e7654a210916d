package podpreset

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	api "k8s.io/kubernetes/pkg/apis/core"

	settingsv1alpha1 "github.com/portcullis-k8s/api/settings/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestMergedItemsAreCopies changes everything an admitted pod got from a preset and shows
// the informer's cached preset unchanged.
func TestMergedItemsAreCopies(t *testing.T) {
	optional := true
	p, _ := newTestPlugin(t, newPreset("p", func(s *settingsv1alpha1.PodPresetSpec) {
		s.Env = []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
		s.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Optional: &optional}}}
		withCache("cache", "/cache")(s)
	}))
	cached := p.presets.List()[0].(*preset)
	// The cached contents, as a pod carries them, copied deeply before admission.
	snapshot := func() *api.PodSpec {
		return (&api.PodSpec{Volumes: cached.volumes, Containers: []api.Container{{
			Env: cached.env, EnvFrom: cached.envFrom, VolumeMounts: cached.volumeMounts}}}).DeepCopy()
	}
	before := snapshot()

	pod := newPod(nil)
	if err, _ := admit(t, p, pod, "pods", "", admission.Create); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Volumes) != 1 {
		t.Fatalf("the preset was not applied: %+v", pod.Spec)
	}
	// What a later admission plugin or webhook patch may do to the admitted pod.
	pod.Spec.Volumes[0].EmptyDir.Medium = api.StorageMediumMemory
	c := &pod.Spec.Containers[0]
	c.Env[0].ValueFrom.FieldRef.FieldPath = "metadata.name"
	*c.EnvFrom[0].ConfigMapRef.Optional = false
	c.VolumeMounts[0].MountPath = "/elsewhere"

	if diff := cmp.Diff(before, snapshot()); diff != "" {
		t.Errorf("changing the admitted pod changed the cached preset (-before +after):\n%s", diff)
	}
}

func TestDryRunRecordsNoEvent(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		t.Run(fmt.Sprintf("dryRun=%v", dryRun), func(t *testing.T) {
			p, recorder := newTestPlugin(t, newPreset("db", withEnv("DB_PORT", "6379")))
			pod := newPod(func(p *api.Pod) { p.Spec.Containers[0].Env = []api.EnvVar{{Name: "DB_PORT", Value: "5432"}} })
			err, warned := admitRequest(t, p, pod, "pods", "", admission.Create, dryRun)
			if err != nil {
				t.Fatal(err)
			}
			if len(warned) != 1 || !strings.Contains(warned[0], "DB_PORT") {
				t.Errorf("the client must get the conflict warning either way, got %v", warned)
			}
			wantEvents := 1
			if dryRun {
				wantEvents = 0
			}
			if got := len(recorder.Events); got != wantEvents {
				t.Errorf("recorded %d events, want %d", got, wantEvents)
			}
		})
	}
}

// TestLabelIndexFindsWhatSelectorsMatch holds the label index to the selectors: for random
// presets and pods, the presets the plugin finds are exactly those whose selector matches.
func TestLabelIndexFindsWhatSelectorsMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys, values := []string{"app", "tier", "role"}, []string{"a", "b", "c"}
	randomSelector := func() metav1.LabelSelector {
		var s metav1.LabelSelector
		if rng.IntN(2) == 0 {
			s.MatchLabels = map[string]string{pick(rng, keys...): pick(rng, values...)}
		}
		for range rng.IntN(3) {
			r := metav1.LabelSelectorRequirement{Key: pick(rng, keys...), Operator: pick(rng, metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist)}
			if r.Operator == metav1.LabelSelectorOpIn || r.Operator == metav1.LabelSelectorOpNotIn {
				r.Values = []string{pick(rng, values...), pick(rng, values...)}
			}
			s.MatchExpressions = append(s.MatchExpressions, r)
		}
		return s
	}
	var presets []*settingsv1alpha1.PodPreset
	for i := range 200 {
		pp := newPreset(fmt.Sprintf("p%03d", i), withEnv("A", "1"))
		pp.Spec.Selector = randomSelector()
		if i%10 == 0 {
			pp.Namespace = "other"
		}
		presets = append(presets, pp)
	}
	p, _ := newTestPlugin(t, presets...)
	for range 500 {
		podLabels := map[string]string{}
		for _, k := range keys {
			if rng.IntN(2) == 0 {
				podLabels[k] = pick(rng, values...)
			}
		}
		var want []string
		for _, pp := range presets {
			selector, err := metav1.LabelSelectorAsSelector(&pp.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			if pp.Namespace == "ns" && selector.Matches(labels.Set(podLabels)) {
				want = append(want, pp.Name)
			}
		}
		var got []string
		for _, pp := range p.matching("ns", podLabels) {
			got = append(got, pp.Name)
		}
		if !slices.Equal(want, got) {
			t.Fatalf("pod labels %v: found %v, want %v", podLabels, got, want)
		}
	}
}

// TestInstallerLogsFailures: a failure to install the CRD is logged at default verbosity
// with its reason, once while it persists.
func TestInstallerLogsFailures(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := dynamicfake.NewSimpleDynamicClient(scheme)
	client.PrependReactor("create", "customresourcedefinitions", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, CRDName, fmt.Errorf("denied by webhook guard.example.com"))
	})
	var logged []string
	logger := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{Verbosity: 0})
	installer := &crdInstaller{client: client, logger: logger}
	for range 3 {
		if installer.ensure(context.Background()) {
			t.Fatal("the CRD is reported established although creating it failed")
		}
	}
	if len(logged) != 1 {
		t.Fatalf("want the failure logged once at default verbosity, got %d lines: %v", len(logged), logged)
	}
	for _, want := range []string{"Installing the PodPreset CRD failed", "denied by webhook guard.example.com", CRDName} {
		if !strings.Contains(logged[0], want) {
			t.Errorf("log line %q does not say %q", logged[0], want)
		}
	}
}
