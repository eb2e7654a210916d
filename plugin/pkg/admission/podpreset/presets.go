package podpreset

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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

// compile turns a PodPreset into a preset. Its contents are defaulted exactly as they would
// be in a pod, so that merged and original fields compare alike and the merged pod passes
// validation (e.g. a fieldRef without apiVersion gets "v1").
func compile(pp *settingsv1alpha1.PodPreset) (*preset, error) {
	selector, err := metav1.LabelSelectorAsSelector(&pp.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
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
	c := internal.Containers[0]
	return &preset{
		TypeMeta:     pp.TypeMeta,
		ObjectMeta:   pp.ObjectMeta,
		selector:     selector,
		env:          c.Env,
		envFrom:      c.EnvFrom,
		volumes:      internal.Volumes,
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
	p := &preset{selector: labels.Nothing()}
	p.Name, p.Namespace, p.UID, p.ResourceVersion = u.GetName(), u.GetNamespace(), u.GetUID(), u.GetResourceVersion()
	return p
}

// newPresetInformer watches PodPresets in every namespace, indexed by namespace.
func newPresetInformer(client dynamic.Interface) cache.SharedIndexInformer {
	informer := dynamicinformer.NewFilteredDynamicInformer(client, settingsv1alpha1.Resource, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	// Only fails once the informer has started, which it has not.
	_ = informer.SetTransform(compileObject)
	return informer
}
