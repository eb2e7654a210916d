// Package initializerconfiguration is the registry strategy of
// admissionregistration.k8s.io/v1alpha1 InitializerConfiguration: a cluster-scoped object
// without status, validated as Kubernetes 1.13 validated it.
package initializerconfiguration

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration/validation"
	"github.com/portcullis-k8s/portcullis/pkg/registry/updatestrategy"
)

// strategy implements create, update and delete for InitializerConfiguration.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	// As in 1.13: an update of a missing configuration is an error, and an update
	// names the resourceVersion it read.
	updatestrategy.NameResourceVersion
}

// Strategy is the default strategy of InitializerConfiguration objects.
var Strategy = strategy{ObjectTyper: legacyscheme.Scheme, NameGenerator: names.SimpleNameGenerator}

var (
	_ rest.RESTCreateStrategy = Strategy
	_ rest.RESTUpdateStrategy = Strategy
	_ rest.RESTDeleteStrategy = Strategy
)

// NamespaceScoped is false: a configuration applies to the whole cluster.
func (strategy) NamespaceScoped() bool { return false }

// PrepareForCreate starts the generation at 1, as 1.13 did.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*admissionregistration.InitializerConfiguration).Generation = 1
}

// PrepareForUpdate moves the generation on when the initializers change, as 1.13 did.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newIC, oldIC := obj.(*admissionregistration.InitializerConfiguration), old.(*admissionregistration.InitializerConfiguration)
	newIC.Generation = oldIC.Generation
	if !apiequality.Semantic.DeepEqual(oldIC.Initializers, newIC.Initializers) {
		newIC.Generation = oldIC.Generation + 1
	}
}

// Canonicalize leaves the object as written.
func (strategy) Canonicalize(runtime.Object) {}

// Validate validates a new configuration.
func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateInitializerConfiguration(obj.(*admissionregistration.InitializerConfiguration))
}

// ValidateUpdate validates an updated configuration.
func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateInitializerConfigurationUpdate(obj.(*admissionregistration.InitializerConfiguration), old.(*admissionregistration.InitializerConfiguration))
}

// WarningsOnCreate has no warning to give.
func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// WarningsOnUpdate has no warning to give.
func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
