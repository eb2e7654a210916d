package podsecuritypolicy

import (
	"fmt"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/apparmor"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/capabilities"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/group"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/seccomp"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/selinux"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/sysctl"
	"github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/user"
)

type simpleStrategyFactory struct{}

var _ StrategyFactory = simpleStrategyFactory{}

// NewSimpleStrategyFactory returns the factory that builds strategies from a policy's spec
// and its seccomp/AppArmor annotations alone.
func NewSimpleStrategyFactory() StrategyFactory {
	return simpleStrategyFactory{}
}

// CreateStrategies reports every problem of the policy at once (not just the first), so an
// operator fixing a broken policy sees the whole list.
func (simpleStrategyFactory) CreateStrategies(psp *policy.PodSecurityPolicy, _ string) (*ProviderStrategies, error) {
	var errs []error
	collect := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	userStrat, err := createUserStrategy(&psp.Spec.RunAsUser)
	collect(err)

	var groupStrat group.GroupStrategy
	if psp.Spec.RunAsGroup == nil {
		// runAsGroup is optional in a policy; absent means no opinion.
		groupStrat, err = group.NewRunAsAny()
	} else {
		groupStrat, err = createGroupStrategy("RunAsGroup", string(psp.Spec.RunAsGroup.Rule), psp.Spec.RunAsGroup.Ranges)
	}
	collect(err)

	seLinuxStrat, err := createSELinuxStrategy(&psp.Spec.SELinux)
	collect(err)

	appArmorStrat, err := apparmor.NewStrategy(psp.Annotations)
	collect(err)

	seccompStrat, err := seccomp.NewStrategy(psp.Annotations)
	collect(err)

	fsGroupStrat, err := createGroupStrategy("FSGroup", string(psp.Spec.FSGroup.Rule), psp.Spec.FSGroup.Ranges)
	collect(err)

	supGroupStrat, err := createGroupStrategy("SupplementalGroups", string(psp.Spec.SupplementalGroups.Rule), psp.Spec.SupplementalGroups.Ranges)
	collect(err)

	capStrat, err := capabilities.NewDefaultCapabilities(psp.Spec.DefaultAddCapabilities, psp.Spec.RequiredDropCapabilities, psp.Spec.AllowedCapabilities)
	collect(err)

	sysctlsStrat := sysctl.NewMustMatchPatterns(sysctl.SafeSysctlAllowlist(), psp.Spec.AllowedUnsafeSysctls, psp.Spec.ForbiddenSysctls)

	if len(errs) > 0 {
		return nil, utilerrors.NewAggregate(errs)
	}
	return &ProviderStrategies{
		RunAsUserStrategy:         userStrat,
		RunAsGroupStrategy:        groupStrat,
		SELinuxStrategy:           seLinuxStrat,
		AppArmorStrategy:          appArmorStrat,
		FSGroupStrategy:           fsGroupStrat,
		SupplementalGroupStrategy: supGroupStrat,
		CapabilitiesStrategy:      capStrat,
		SysctlsStrategy:           sysctlsStrat,
		SeccompStrategy:           seccompStrat,
	}, nil
}

func createUserStrategy(opts *policy.RunAsUserStrategyOptions) (user.RunAsUserStrategy, error) {
	switch opts.Rule {
	case policy.RunAsUserStrategyMustRunAs:
		return user.NewMustRunAs(opts)
	case policy.RunAsUserStrategyMustRunAsNonRoot:
		return user.NewRunAsNonRoot(opts)
	case policy.RunAsUserStrategyRunAsAny:
		return user.NewRunAsAny(opts)
	}
	return nil, fmt.Errorf("unrecognized RunAsUser strategy type %q", opts.Rule)
}

func createSELinuxStrategy(opts *policy.SELinuxStrategyOptions) (selinux.SELinuxStrategy, error) {
	switch opts.Rule {
	case policy.SELinuxStrategyMustRunAs:
		return selinux.NewMustRunAs(opts)
	case policy.SELinuxStrategyRunAsAny:
		return selinux.NewRunAsAny(opts)
	}
	return nil, fmt.Errorf("unrecognized SELinuxContext strategy type %q", opts.Rule)
}

// createGroupStrategy serves runAsGroup, fsGroup and supplementalGroups: their rule types
// are distinct Go types with the same three values.
func createGroupStrategy(what, rule string, ranges []policy.IDRange) (group.GroupStrategy, error) {
	var (
		s   group.GroupStrategy
		err error
	)
	switch rule {
	// The three rule types share their values; compare as strings against one of them.
	case string(policy.FSGroupStrategyMustRunAs):
		s, err = group.NewMustRunAs(ranges)
	case string(policy.FSGroupStrategyMayRunAs):
		s, err = group.NewMayRunAs(ranges)
	case string(policy.FSGroupStrategyRunAsAny):
		s, err = group.NewRunAsAny()
	default:
		return nil, fmt.Errorf("unrecognized %s strategy type %q", what, rule)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return s, nil
}
