// Package podsecuritypolicy is the registry strategy of policy/v1beta1 PodSecurityPolicy: a
// cluster-scoped object without status, validated as Kubernetes 1.24 validated it.
package podsecuritypolicy

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy/validation"
	"github.com/portcullis-k8s/portcullis/pkg/registry/updatestrategy"
)

// strategy implements create, update and delete for PodSecurityPolicy.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	// An update of a missing policy is an error, as in 1.24; a PUT without a
	// resourceVersion replaces the policy.
	updatestrategy.Replace
}

// Strategy is the default strategy of PodSecurityPolicy objects.
var Strategy = strategy{ObjectTyper: legacyscheme.Scheme, NameGenerator: names.SimpleNameGenerator}

var (
	_ rest.RESTCreateStrategy = Strategy
	_ rest.RESTUpdateStrategy = Strategy
	_ rest.RESTDeleteStrategy = Strategy
)

// NamespaceScoped is false: a policy is granted per namespace through RBAC, not stored in one.
func (strategy) NamespaceScoped() bool { return false }

// PrepareForCreate has nothing to clear: the object has no status.
func (strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate has nothing to carry over: the object has no status.
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Canonicalize leaves the object as written.
func (strategy) Canonicalize(runtime.Object) {}

// Validate validates a new policy.
func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidatePodSecurityPolicy(obj.(*policy.PodSecurityPolicy))
}

// ValidateUpdate validates a policy update.
func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePodSecurityPolicyUpdate(old.(*policy.PodSecurityPolicy), obj.(*policy.PodSecurityPolicy))
}

// WarningsOnCreate warns of what 1.24 accepted but cannot mean what it says.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return warnings(obj.(*policy.PodSecurityPolicy))
}

// WarningsOnUpdate warns as WarningsOnCreate does.
func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return warnings(obj.(*policy.PodSecurityPolicy))
}

// maxPort is the highest port a container may bind.
const maxPort = 65535

// warnings: host port ranges outside 0-65535 or inverted are accepted, as 1.24 accepted
// them (exported policies must import), but only the ports they really cover are allowed.
func warnings(psp *policy.PodSecurityPolicy) []string {
	var out []string
	path := field.NewPath("spec", "hostPorts")
	for i, r := range psp.Spec.HostPorts {
		switch {
		case r.Min > r.Max:
			out = append(out, fmt.Sprintf("%s: min %d is greater than max %d: the range allows no port", path.Index(i), r.Min, r.Max))
		case r.Min < 0 || r.Max > maxPort:
			out = append(out, fmt.Sprintf("%s: %d-%d reaches outside 0-%d: only the ports inside are allowed", path.Index(i), r.Min, r.Max, maxPort))
		}
	}
	return out
}
