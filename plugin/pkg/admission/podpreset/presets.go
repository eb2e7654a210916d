package podpreset

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"

	settingsv1alpha1 "github.com/portcullis-k8s/api/settings/v1alpha1"
)

// preset is a PodPreset as the plugin keeps it: its selector parsed and its contents
// defaulted and converted to the API server's internal types once, when the informer
// receives it, rather than on every pod.
type preset struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	selector     labels.Selector
	labelKeys    []string // the preset's keys in the label index
	env          []api.EnvVar
	envFrom      []api.EnvFromSource
	volumes      []api.Volume
	volumeMounts []api.VolumeMount
}

// DeepCopyObject copies the metadata; the compiled contents are never modified after
// compilation, so they are shared.
func (p *preset) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (p *preset) reference() *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion:      settingsv1alpha1.SchemeGroupVersion.String(),
		Kind:            "PodPreset",
		Namespace:       p.Namespace,
		Name:            p.Name,
		UID:             p.UID,
		ResourceVersion: p.ResourceVersion,
	}
}

// internalSpec returns the preset's contents as the internal spec of a pod with one
// container, defaulted exactly as they would be in a pod, so that merged and original fields
// compare alike and the merged pod passes validation (e.g. a fieldRef without apiVersion
// gets "v1"). pp is not modified.
func internalSpec(pp *settingsv1alpha1.PodPreset) (*api.PodSpec, error) {
	carrier := &corev1.Pod{Spec: corev1.PodSpec{
		Volumes: pp.Spec.Volumes,
		Containers: []corev1.Container{{
			Env:          pp.Spec.Env,
			EnvFrom:      pp.Spec.EnvFrom,
			VolumeMounts: pp.Spec.VolumeMounts,
		}},
	}}
	carrier = carrier.DeepCopy()
	corev1conversion.SetObjectDefaults_Pod(carrier)
	var internal api.PodSpec
	if err := corev1conversion.Convert_v1_PodSpec_To_core_PodSpec(&carrier.Spec, &internal, nil); err != nil {
		return nil, fmt.Errorf("converting spec: %w", err)
	}
	return &internal, nil
}

// compile turns a valid PodPreset into a preset, or returns why it is not valid.
func compile(pp *settingsv1alpha1.PodPreset) (*preset, error) {
	spec, err := internalSpec(pp)
	if err != nil {
		return nil, err
	}
	if errs := validatePreset(pp.Name, &pp.Spec.Selector, spec); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	selector, err := metav1.LabelSelectorAsSelector(&pp.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	c := spec.Containers[0]
	return &preset{
		TypeMeta:     pp.TypeMeta,
		ObjectMeta:   pp.ObjectMeta,
		selector:     selector,
		labelKeys:    labelIndexKeys(pp.Namespace, selector),
		env:          c.Env,
		envFrom:      c.EnvFrom,
		volumes:      spec.Volumes,
		volumeMounts: c.VolumeMounts,
	}, nil
}

// compileObject is the informer's transform: it stores presets, not unstructured objects.
// A PodPreset that cannot be compiled is kept as a preset that matches nothing, and logged.
func compileObject(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // already compiled, or a tombstone
	}
	var pp settingsv1alpha1.PodPreset
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pp); err != nil {
		return unusable(u, err), nil
	}
	compiled, err := compile(&pp)
	if err != nil {
		return unusable(u, err), nil
	}
	return compiled, nil
}

func unusable(u *unstructured.Unstructured, err error) *preset {
	klog.ErrorS(err, "PodPreset cannot be applied; it matches no pod", "podpreset", klog.KObj(u))
	// Not in the label index at all: it can match no pod.
	p := &preset{selector: labels.Nothing()}
	p.Name, p.Namespace, p.UID, p.ResourceVersion = u.GetName(), u.GetNamespace(), u.GetUID(), u.GetResourceVersion()
	return p
}

// labelIndex indexes presets by label so that a pod is tested only against the presets that
// can match it, not against every preset of its namespace.
const labelIndex = "podpreset-label"

// labelIndexKeys returns keys under which a pod matching selector is sure to find the preset:
// "<namespace>/<key>=<value>" for each value of the selector's first requirement that names
// values (a pod must meet every requirement, so one is enough), or "<namespace>/" when no
// requirement does (an empty selector, or only NotIn, Exists and DoesNotExist).
func labelIndexKeys(namespace string, selector labels.Selector) []string {
	requirements, _ := selector.Requirements()
	for _, r := range requirements {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			values := r.ValuesUnsorted()
			keys := make([]string, len(values))
			for i, v := range values {
				keys[i] = labelKey(namespace, r.Key(), v)
			}
			return keys
		}
	}
	return []string{namespace + "/"}
}

func labelKey(namespace, key, value string) string {
	return namespace + "/" + key + "=" + value
}

func presetIndexers() cache.Indexers {
	return cache.Indexers{labelIndex: indexByLabel}
}

func indexByLabel(obj any) ([]string, error) {
	if p, ok := obj.(*preset); ok {
		return p.labelKeys, nil
	}
	return nil, nil
}

// newPresetInformer watches PodPresets in every namespace, indexed by label.
func newPresetInformer(client dynamic.Interface) cache.SharedIndexInformer {
	informer := dynamicinformer.NewFilteredDynamicInformer(client, settingsv1alpha1.Resource, metav1.NamespaceAll, 0,
		presetIndexers(), nil).Informer()
	// Only fails once the informer has started, which it has not.
	_ = informer.SetTransform(compileObject)
	return informer
}
