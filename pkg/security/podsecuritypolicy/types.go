package podsecuritypolicy

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/apparmor"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/capabilities"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/group"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/seccomp"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/selinux"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/sysctl"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/user"
)

// Provider applies one PodSecurityPolicy to pods.
type Provider interface {
	// MutatePod sets the policy's defaults on the pod in place, leaving every value the pod
	// already has. Copying the pod first (e.g. to try several policies) is the caller's job.
	// Nothing the pod ends up pointing to belongs to the policy.
	MutatePod(pod *api.Pod) error
	// ValidatePod returns every way the pod violates the policy; it does not modify the pod.
	ValidatePod(pod *api.Pod) field.ErrorList
	// GetPSPName returns the name of the policy the provider was built from.
	GetPSPName() string
}

// StrategyFactory builds the strategies of one policy.
type StrategyFactory interface {
	// CreateStrategies builds every strategy of psp; namespace is the pod's namespace (unused
	// by the simple factory, kept because 1.24's factory took it and others may need it).
	CreateStrategies(psp *policy.PodSecurityPolicy, namespace string) (*ProviderStrategies, error)
}

// ProviderStrategies holds the strategies of one policy.
type ProviderStrategies struct {
	RunAsUserStrategy         user.RunAsUserStrategy
	RunAsGroupStrategy        group.GroupStrategy
	SELinuxStrategy           selinux.SELinuxStrategy
	AppArmorStrategy          apparmor.Strategy
	FSGroupStrategy           group.GroupStrategy
	SupplementalGroupStrategy group.GroupStrategy
	CapabilitiesStrategy      capabilities.Strategy
	SysctlsStrategy           sysctl.SysctlsStrategy
	SeccompStrategy           seccomp.Strategy
}
