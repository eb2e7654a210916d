package podpreset

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	"sigs.k8s.io/yaml"

	settingsv1alpha1 "github.com/portcullis-k8s/api/settings/v1alpha1"
)

// Seeds are the presets and pods of the tests (the documentation's example, the conflict
// cases, TestAcceptedPresetsMergeIntoValidPods's generator); crashers Go finds are kept
// under testdata/fuzz/<target>.

// seedPresets returns the tests' presets, and as many drawn by randomPreset.
func seedPresets() []*settingsv1alpha1.PodPreset {
	presets := []*settingsv1alpha1.PodPreset{
		newPreset("allow-database", func(s *settingsv1alpha1.PodPresetSpec) {
			withEnv("DB_PORT", "6379")(s)
			withCache("cache-volume", "/cache")(s)
		}),
		newPreset("expr", func(s *settingsv1alpha1.PodPresetSpec) {
			s.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "role", Operator: metav1.LabelSelectorOpIn, Values: []string{"frontend", "edge"}}}}
			withEnv("A", "1")(s)
		}),
		newPreset("a", func(s *settingsv1alpha1.PodPresetSpec) {
			withEnv("A", "1")(s)
			s.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
		}),
		newPreset("b", func(s *settingsv1alpha1.PodPresetSpec) {
			s.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}}}
		}),
		newPreset("p", func(s *settingsv1alpha1.PodPresetSpec) {
			s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			s.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v", SubPath: "../etc"}}
		}),
		newPreset("s", func(s *settingsv1alpha1.PodPresetSpec) {
			s.Selector.MatchLabels = map[string]string{"not a key!": "x"}
			s.Env = []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
		}),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 6 {
		presets = append(presets, randomPreset(rng, i))
	}
	return presets
}

func toJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// unstructuredOf decodes JSON or YAML as the API server decodes a custom resource's body.
func unstructuredOf(data []byte) (map[string]any, bool) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, false
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil || obj == nil {
		return nil, false
	}
	return obj, true
}

// FuzzValidate validates a PodPreset write as the plugin does, from the object the CRD's
// handler decodes. The plugin answers 422 or 400 or admits; and what it admits, the
// informer compiles into a preset that can match pods (the write-time and cache-time views
// agree).
func FuzzValidate(f *testing.F) {
	for _, pp := range seedPresets() {
		f.Add(toJSON(f, pp))
	}
	f.Add([]byte("apiVersion: settings.k8s.io/v1alpha1\nkind: PodPreset\nmetadata: {name: x}\nspec:\n  selector: {matchExpressions: [{key: a, operator: Exists}]}\n  env: [{name: A, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, ok := unstructuredOf(data)
		if !ok {
			return
		}
		u := &unstructured.Unstructured{Object: obj}
		attrs := admission.NewAttributesRecord(u, nil, settingsv1alpha1.SchemeGroupVersion.WithKind("PodPreset"), "ns", u.GetName(),
			settingsv1alpha1.Resource, "", admission.Create, nil, false, nil)
		err := New().Validate(context.Background(), attrs, nil)
		if err != nil && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
			t.Fatalf("want 422 Invalid, 400 Bad Request or acceptance, got %v", err)
		}
		// The same errors, in whatever order (upstream validates labels in map order).
		again := New().Validate(context.Background(), attrs, nil)
		if !slices.Equal(errorCauses(err), errorCauses(again)) {
			t.Fatalf("not deterministic: %v, then %v", err, again)
		}
		compiled, cerr := compileObject(u.DeepCopy())
		if cerr != nil {
			t.Fatal(cerr)
		}
		pp := compiled.(*preset)
		if err == nil && len(pp.labelKeys) == 0 {
			t.Fatalf("an accepted preset is compiled into one that matches nothing")
		}
		if apierrors.IsInvalid(err) && len(pp.labelKeys) != 0 {
			t.Fatalf("a refused preset (%v) is compiled into one that matches pods", err)
		}
	})
}

// errorCauses returns an admission error's reason and causes, sorted; nil for no error.
func errorCauses(err error) []string {
	if err == nil {
		return nil
	}
	out := []string{string(apierrors.ReasonForError(err))}
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			out = append(out, fmt.Sprintf("%s %s: %s", c.Type, c.Field, c.Message))
		}
	} else {
		out = append(out, err.Error())
	}
	slices.Sort(out[1:])
	return out
}

// fuzzPresetsMax bounds the presets of one FuzzAdmit input.
const fuzzPresetsMax = 8

// FuzzAdmit is TestAcceptedPresetsMergeIntoValidPods's property over fuzzed presets and
// pods: the presets the plugin accepts, merged into a pod that passes the API server's
// validation of a new pod, give a pod that passes it too — or a conflict, and the pod is
// admitted unchanged.
func FuzzAdmit(f *testing.F) {
	presets := seedPresets()
	pods := seedPods(f)
	for i := range presets {
		f.Add(toJSON(f, presets[i:min(i+2, len(presets))]), toJSON(f, pods[i%len(pods)]))
	}
	f.Fuzz(func(t *testing.T, presetsData, podData []byte) {
		var list []json.RawMessage
		if err := yaml.Unmarshal(presetsData, &list); err != nil || len(list) > fuzzPresetsMax {
			return
		}
		var accepted []*settingsv1alpha1.PodPreset
		for i, raw := range list {
			obj, ok := unstructuredOf(raw)
			if !ok {
				return
			}
			var pp settingsv1alpha1.PodPreset
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &pp); err != nil {
				return
			}
			// Every preset in the pod's namespace, each under a name of its own that the
			// API server accepts for a custom resource (a DNS subdomain).
			pp.Namespace = "ns"
			if len(utilvalidation.IsDNS1123Subdomain(pp.Name)) > 0 || len(pp.Name) > MaxNameLength-2 {
				pp.Name = fmt.Sprintf("p%d", i)
			} else {
				pp.Name = fmt.Sprintf("%s%d", pp.Name, i)
			}
			if validateWrite(t, &pp) == nil {
				accepted = append(accepted, &pp)
			}
		}
		if len(accepted) == 0 {
			return
		}
		var v1 corev1.Pod
		if err := yaml.Unmarshal(podData, &v1); err != nil {
			return
		}
		v1.Namespace = "ns"
		corev1conversion.SetObjectDefaults_Pod(&v1)
		var pod api.Pod
		if err := corev1conversion.Convert_v1_Pod_To_core_Pod(&v1, &pod, nil); err != nil {
			return
		}
		if errs := validateNewPod(&pod); len(errs) != 0 {
			return
		}
		p, _ := newTestPlugin(t, accepted...)
		cached := snapshotPresets(p)
		before := pod.DeepCopy()
		err, warned := admit(t, p, &pod, "pods", "", admission.Create)
		if err != nil {
			t.Fatalf("admission failed: %v", err)
		}
		if len(warned) > 0 {
			if !apiequality.Semantic.DeepEqual(before, &pod) {
				t.Fatalf("a conflict (%q) changed the pod", warned)
			}
			return
		}
		if errs := validateNewPod(&pod); len(errs) != 0 {
			t.Fatalf("accepted presets merged into a valid pod give an invalid one:\npresets: %s\npod before: %+v\nerrors: %v",
				toJSON(t, accepted), before.Spec, errs)
		}
		// What the pod got is its own: changing it leaves the informer's presets alone.
		scribble(&pod)
		if after := snapshotPresets(p); !reflect.DeepEqual(cached, after) {
			t.Fatalf("changing the admitted pod changed the cached presets: %s", cmp.Diff(cached, after))
		}
	})
}

// seedPods returns v1 pods that pass the validation of a new pod: the tests' pod (newPod)
// with images, and variants with the conflicting items of TestConflicts.
func seedPods(t testing.TB) []*corev1.Pod {
	var out []*corev1.Pod
	for _, mutate := range []func(*api.Pod){
		nil,
		func(p *api.Pod) { p.Spec.Containers[0].Env = []api.EnvVar{{Name: "DB_PORT", Value: "5432"}} },
		func(p *api.Pod) { p.Spec.InitContainers[0].Env = []api.EnvVar{{Name: "A", Value: "1"}} },
		func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "cache", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "cache", MountPath: "/cache"}}
		},
		func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "block", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}}}
			p.Spec.Containers[0].VolumeDevices = []api.VolumeDevice{{Name: "block", DevicePath: "/dev/xvda"}}
		},
	} {
		pod := newPod(mutate)
		pod.Spec.EphemeralContainers = nil
		for i := range pod.Spec.InitContainers {
			pod.Spec.InitContainers[i].Image = "busybox"
		}
		for i := range pod.Spec.Containers {
			pod.Spec.Containers[i].Image = "nginx"
		}
		var v1 corev1.Pod
		if err := corev1conversion.Convert_core_Pod_To_v1_Pod(pod, &v1, nil); err != nil {
			t.Fatal(err)
		}
		out = append(out, &v1)
	}
	return out
}

// snapshotPresets deep-copies the compiled contents of every cached preset, by name.
func snapshotPresets(p *Plugin) []*api.PodSpec {
	var out []*api.PodSpec
	keys := p.presets.ListKeys()
	slices.Sort(keys)
	for _, key := range keys {
		obj, _, _ := p.presets.GetByKey(key)
		pp := obj.(*preset)
		out = append(out, (&api.PodSpec{Volumes: pp.volumes, Containers: []api.Container{{
			Env: pp.env, EnvFrom: pp.envFrom, VolumeMounts: pp.volumeMounts}}}).DeepCopy())
	}
	return out
}

// scribble changes, in place, whatever an admitted pod's volumes, env, envFrom and mounts
// point to, as a later plugin or a webhook's patch may.
func scribble(pod *api.Pod) {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		v.Name += "x"
		if v.EmptyDir != nil {
			v.EmptyDir.Medium = "scribbled"
		}
		if v.HostPath != nil {
			v.HostPath.Path += "x"
		}
	}
	forEachContainer(pod, func(c *api.Container) {
		for i := range c.Env {
			c.Env[i].Name += "x"
			if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil {
				vf.FieldRef.FieldPath += "x"
			}
		}
		for i := range c.EnvFrom {
			c.EnvFrom[i].Prefix += "x"
			if ref := c.EnvFrom[i].ConfigMapRef; ref != nil {
				ref.Name += "x"
			}
		}
		for i := range c.VolumeMounts {
			c.VolumeMounts[i].MountPath += "x"
		}
	})
}
