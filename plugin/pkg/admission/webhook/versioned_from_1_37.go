//go:build !kube1.35 && !kube1.36

package webhook

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/client-go/informers"
)

// Kubernetes 1.37 holds the versioned objects of a webhook call in a LazyObject (which caches
// their CEL form), and its configuration managers are told the resources no webhook may
// intercept.

// SourceFactory builds the source of a plugin's webhook configurations (upstream's
// configuration managers).
type SourceFactory = func(informers.SharedInformerFactory, sets.Set[schema.GroupResource]) generic.Source

// VersionedObject is attr's object, converted to the webhook's version.
func VersionedObject(attr *admission.VersionedAttributes) runtime.Object {
	return attr.VersionedObject.Object()
}

// VersionedOldObject is attr's old object, converted to the webhook's version.
func VersionedOldObject(attr *admission.VersionedAttributes) runtime.Object {
	return attr.VersionedOldObject.Object()
}

// NewVersionedAttributes is record with obj and old, of kind, as its versioned objects.
func NewVersionedAttributes(record admission.Attributes, obj, old runtime.Object, kind schema.GroupVersionKind) *admission.VersionedAttributes {
	return &admission.VersionedAttributes{Attributes: record, VersionedObject: admission.NewLazyObject(obj),
		VersionedOldObject: admission.NewLazyObject(old), VersionedKind: kind}
}

// UpdateVersionedObject replaces attr's versioned object with a webhook's patched one.
func UpdateVersionedObject(attr *admission.VersionedAttributes, obj runtime.Object) {
	attr.UpdateObject(obj)
}
