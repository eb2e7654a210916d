package podpreset

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/admission"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	settingsv1alpha1 "github.com/portcullis-k8s/api/settings/v1alpha1"
)

// validateWrite runs the plugin's validation of a PodPreset CREATE, as the API server calls
// it: with the object as the CRD's handler decodes it.
func validateWrite(t *testing.T, pp *settingsv1alpha1.PodPreset) error {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pp)
	if err != nil {
		t.Fatal(err)
	}
	attrs := admission.NewAttributesRecord(&unstructured.Unstructured{Object: obj}, nil,
		settingsv1alpha1.SchemeGroupVersion.WithKind("PodPreset"), pp.Namespace, pp.Name,
		settingsv1alpha1.Resource, "", admission.Create, nil, false, nil)
	return New().Validate(context.Background(), attrs, nil)
}

func TestValidatePresetWrites(t *testing.T) {
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	tests := []struct {
		name   string
		preset *settingsv1alpha1.PodPreset
		// wantFields lists a field path each error must name; empty means accepted.
		wantFields []string
	}{
		{
			name: "the documentation's example is accepted",
			preset: newPreset("allow-database", func(s *settingsv1alpha1.PodPresetSpec) {
				withEnv("DB_PORT", "6379")(s)
				withCache("cache-volume", "/cache")(s)
			}),
		},
		{
			name: "an absent selector is accepted",
			preset: newPreset("everyone", func(s *settingsv1alpha1.PodPresetSpec) {
				s.Selector = metav1.LabelSelector{}
				withEnv("A", "1")(s)
			}),
		},
		{
			name: "a selector with a bad operator",
			preset: newPreset("p", func(s *settingsv1alpha1.PodPresetSpec) {
				s.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near", Values: []string{"x"}}}
				withEnv("A", "1")(s)
			}),
			wantFields: []string{"spec.selector.matchExpressions[0].operator"},
		},
		{
			name: "a selector with a bad key",
			preset: newPreset("p", func(s *settingsv1alpha1.PodPresetSpec) {
				s.Selector.MatchLabels = map[string]string{"not a key!": "x"}
				withEnv("A", "1")(s)
			}),
			wantFields: []string{"spec.selector.matchLabels"},
		},
		{
			name:       "an invalid env var name",
			preset:     newPreset("p", withEnv("A=B", "1")),
			wantFields: []string{"spec.env[0].name"},
		},
		{
			name: "a volume with two sources",
			preset: newPreset("p", func(s *settingsv1alpha1.PodPresetSpec) {
				s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
					EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}}}
			}),
			wantFields: []string{"spec.volumes[0].hostPath"},
		},
		{
			// Defaulted to an emptyDir, as 1.19 defaulted presets and as pods are defaulted.
			name: "a volume with no source is an emptyDir",
			preset: newPreset("p", func(s *settingsv1alpha1.PodPresetSpec) {
				s.Volumes = []corev1.Volume{{Name: "v"}}
			}),
		},
		{
			name: "an envFrom with both configMapRef and secretRef",
			preset: newPreset("p", func(s *settingsv1alpha1.PodPresetSpec) {
				s.EnvFrom = []corev1.EnvFromSource{{
					ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}},
					SecretRef:    &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}},
				}}
			}),
			wantFields: []string{"spec.envFrom"},
		},
		{
			name: "a subPath that leaves the volume",
			preset: newPreset("p", func(s *settingsv1alpha1.PodPresetSpec) {
				s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: emptyDir}}
				s.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v", SubPath: "../etc"}}
			}),
			wantFields: []string{"spec.volumeMounts.subPath"},
		},
		{
			name: "a volumeMount naming no volume of the preset",
			preset: newPreset("p", func(s *settingsv1alpha1.PodPresetSpec) {
				s.VolumeMounts = []corev1.VolumeMount{{Name: "elsewhere", MountPath: "/v"}}
			}),
			wantFields: []string{"spec.volumeMounts[0].name"},
		},
		{
			name:       "nothing to inject",
			preset:     newPreset("p", nil),
			wantFields: []string{"spec"},
		},
		{
			name:   fmt.Sprintf("a name of %d characters fits the pod annotation", MaxNameLength),
			preset: newPreset(strings.Repeat("n", MaxNameLength), withEnv("A", "1")),
		},
		{
			name:       fmt.Sprintf("a name of %d characters would break every pod it matches", MaxNameLength+1),
			preset:     newPreset(strings.Repeat("n", MaxNameLength+1), withEnv("A", "1")),
			wantFields: []string{"metadata.name"},
		},
		{
			name: "every error at once",
			preset: newPreset("p", func(s *settingsv1alpha1.PodPresetSpec) {
				withEnv("A=B", "1")(s)
				s.VolumeMounts = []corev1.VolumeMount{{Name: "elsewhere", MountPath: "/v"}}
			}),
			wantFields: []string{"spec.env[0].name", "spec.volumeMounts[0].name"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateWrite(t, tc.preset)
			if len(tc.wantFields) == 0 {
				if err != nil {
					t.Fatalf("want the preset accepted, got %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want 422 Invalid, got %v", err)
			}
			for _, f := range tc.wantFields {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q does not name %s", err.Error(), f)
				}
			}
		})
	}
}

// TestMaxNameLengthIsTheAnnotationKeyLimit holds MaxNameLength to the API server's own check
// of annotation keys.
func TestMaxNameLengthIsTheAnnotationKeyLimit(t *testing.T) {
	if errs := utilvalidation.IsQualifiedName(AppliedAnnotationPrefix + strings.Repeat("n", MaxNameLength)); len(errs) != 0 {
		t.Errorf("the annotation of a %d-character name is refused: %v", MaxNameLength, errs)
	}
	if errs := utilvalidation.IsQualifiedName(AppliedAnnotationPrefix + strings.Repeat("n", MaxNameLength+1)); len(errs) == 0 {
		t.Errorf("the annotation of a %d-character name is accepted: MaxNameLength is too small", MaxNameLength+1)
	}
}

func TestInvalidStoredPresetMatchesNothing(t *testing.T) {
	// Written while the plugin was off, so never validated: it must not break pods.
	stored := newPreset("broken", withEnv("A=B", "1"))
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(stored)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := compileObject(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	pp := compiled.(*preset)
	if len(pp.labelKeys) != 0 || pp.selector.Matches(labels.Set(newPod(nil).Labels)) {
		t.Fatalf("an invalid preset is applied: keys %v, selector %v", pp.labelKeys, pp.selector)
	}
}

// validPod returns a pod that passes the API server's validation of a new pod, defaulted as
// the server defaults it.
func validPod(t *testing.T, rng *rand.Rand) *api.Pod {
	t.Helper()
	v1 := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"role": "frontend"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "app", Image: "nginx"}},
		},
	}
	if rng.IntN(2) == 0 {
		v1.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		v1.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: pick(rng, "/cache", "/data")}}
	}
	if rng.IntN(2) == 0 {
		v1.Spec.Containers[0].Env = []corev1.EnvVar{{Name: pick(rng, "A", "B"), Value: pick(rng, "1", "2")}}
	}
	if rng.IntN(4) == 0 {
		v1.Spec.Volumes = append(v1.Spec.Volumes, corev1.Volume{Name: "block", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}})
		v1.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "block", DevicePath: pick(rng, "/dev/block", "/dev/xvda")}}
	}
	corev1conversion.SetObjectDefaults_Pod(v1)
	var pod api.Pod
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(v1, &pod, nil); err != nil {
		t.Fatal(err)
	}
	if errs := validateNewPod(&pod); len(errs) != 0 {
		t.Fatalf("the generated pod is invalid: %v", errs)
	}
	return &pod
}

func validateNewPod(pod *api.Pod) []string {
	var out []string
	for _, err := range corevalidation.ValidatePodCreate(pod, podutil.GetValidationOptionsFromPodSpecAndMeta(&pod.Spec, nil, &pod.ObjectMeta, nil)) {
		out = append(out, err.Error())
	}
	return out
}

func pick[T any](rng *rand.Rand, choices ...T) T { return choices[rng.IntN(len(choices))] }

// randomPreset returns a PodPreset drawn from a small universe of parts, a few of them
// invalid, so that both outcomes of validation are frequent.
func randomPreset(rng *rand.Rand, i int) *settingsv1alpha1.PodPreset {
	return newPreset(fmt.Sprintf("p%d", i), func(s *settingsv1alpha1.PodPresetSpec) {
		if rng.IntN(8) == 0 {
			s.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "role", Operator: pick[metav1.LabelSelectorOperator](rng, "In", "NotIn", "Exists", "Bogus"), Values: pick(rng, []string{"frontend"}, nil)}}
		}
		for range rng.IntN(3) {
			e := corev1.EnvVar{Name: pick(rng, "A", "B", "DB_PORT", "C", "D", "E", "F", "G", "H", "I", "J", "HAS=EQ")}
			switch rng.IntN(4) {
			case 0:
				e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: pick(rng, "metadata.name", "spec.nodeName", "status.podIP", "metadata.uid", "spec.serviceAccountName", "bad.path")}}
			case 1:
				e.ValueFrom = &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: pick(rng, "", "", "app"), Resource: pick(rng, "limits.cpu", "requests.memory", "limits.memory", "requests.cpu", "limits.ephemeral-storage", "bogus")}}
			case 2:
				e.ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: pick(rng, "cm", "cm2", "")}, Key: pick(rng, "k", "k2", "k3", "k4", "k5", "bad key!")}}
			default:
				e.Value = pick(rng, "1", "2")
			}
			s.Env = append(s.Env, e)
		}
		for range rng.IntN(2) {
			e := corev1.EnvFromSource{Prefix: pick(rng, "", "", "P_", "Q_", "R_", "S_", "T_", "U_", "V_", "W_", "X_", "bad=")}
			if rng.IntN(12) != 0 {
				e.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: pick(rng, "cm", "cm2", "cm3", "cm4", "cm5", "")}}
			}
			if rng.IntN(12) == 0 {
				e.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}
			}
			s.EnvFrom = append(s.EnvFrom, e)
		}
		var names []string
		for range rng.IntN(3) {
			v := corev1.Volume{Name: pick(rng, "cache", "data", "block", "logs", "tmp", "srv", "opt", "mnt", "var", "etc", "home", "Bad_Name")}
			switch rng.IntN(12) {
			case 0:
				v.HostPath = &corev1.HostPathVolumeSource{Path: pick(rng, "/tmp", "/var", "/srv", "/opt", "/mnt", "")}
			case 1:
				v.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}
			case 2:
				v.EmptyDir = &corev1.EmptyDirVolumeSource{}
				v.Secret = &corev1.SecretVolumeSource{SecretName: "s"}
			case 3, 4:
				// no source: defaulted to an emptyDir
			default:
				v.EmptyDir = &corev1.EmptyDirVolumeSource{}
			}
			s.Volumes = append(s.Volumes, v)
			names = append(names, v.Name)
		}
		mounts := rng.IntN(3)
		if len(names) == 0 && rng.IntN(6) != 0 {
			mounts = 0
		}
		for range mounts {
			name := "missing"
			if len(names) > 0 && rng.IntN(12) != 0 {
				name = pick(rng, names...)
			}
			s.VolumeMounts = append(s.VolumeMounts, corev1.VolumeMount{
				Name:      name,
				MountPath: pick(rng, "/cache", "/data", "/dev/block", "/logs", "/tmp", "/srv", "/opt", "/mnt", "/var", "/etc/app", "/home", ""),
				SubPath:   pick(rng, "", "", "", "", "", "", "", "", "sub", "dir/sub", "deep/er/sub", "../up"),
				ReadOnly:  rng.IntN(2) == 0,
			})
		}
	})
}

// TestAcceptedPresetsMergeIntoValidPods is the property the write-time validation exists
// for: a preset that is accepted, merged into a valid pod, gives a pod that passes the API
// server's validation, or a conflict that leaves the pod as it was.
func TestAcceptedPresetsMergeIntoValidPods(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var accepted, rejected, merged int
	for i := range 3000 {
		pp := randomPreset(rng, i)
		if err := validateWrite(t, pp); err != nil {
			if !apierrors.IsInvalid(err) {
				t.Fatalf("preset %d: want 422 Invalid or acceptance, got %v", i, err)
			}
			rejected++
			continue
		}
		accepted++
		pod := validPod(t, rng)
		before := pod.DeepCopy()
		p, _ := newTestPlugin(t, pp)
		if err, warned := admit(t, p, pod, "pods", "", admission.Create); err != nil {
			t.Fatalf("preset %d: admission failed: %v", i, err)
		} else if len(warned) > 0 {
			continue // a conflict: admitted unchanged, as TestConflicts shows
		}
		merged++
		if errs := validateNewPod(pod); len(errs) != 0 {
			t.Fatalf("preset %d was accepted, but merged into a valid pod gives an invalid one:\npreset: %+v\npod before: %+v\nerrors: %v",
				i, pp.Spec, before.Spec, errs)
		}
	}
	t.Logf("%d presets accepted (%d merged without conflict), %d rejected", accepted, merged, rejected)
	if accepted < 500 || rejected < 500 || merged < 300 {
		t.Fatalf("the generator exercises too little: %d accepted, %d merged, %d rejected", accepted, merged, rejected)
	}
}
