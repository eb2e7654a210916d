//go:build kube1.35 || kube1.36

package webhook

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/client-go/informers"
)

// Before 1.37 the versioned objects of a webhook call are plain objects, and the
// configuration managers take only the informer factory.

// SourceFactory builds the source of a plugin's webhook configurations (upstream's
// configuration managers).
type SourceFactory = func(informers.SharedInformerFactory) generic.Source

// VersionedObject is attr's object, converted to the webhook's version.
func VersionedObject(attr *admission.VersionedAttributes) runtime.Object {
	return attr.VersionedObject
}

// VersionedOldObject is attr's old object, converted to the webhook's version.
func VersionedOldObject(attr *admission.VersionedAttributes) runtime.Object {
	return attr.VersionedOldObject
}

// NewVersionedAttributes is record with obj and old, of kind, as its versioned objects.
func NewVersionedAttributes(record admission.Attributes, obj, old runtime.Object, kind schema.GroupVersionKind) *admission.VersionedAttributes {
	return &admission.VersionedAttributes{Attributes: record, VersionedObject: obj, VersionedOldObject: old, VersionedKind: kind}
}

// UpdateVersionedObject replaces attr's versioned object with a webhook's patched one.
func UpdateVersionedObject(attr *admission.VersionedAttributes, obj runtime.Object) {
	attr.Dirty = true
	attr.VersionedObject = obj
}
