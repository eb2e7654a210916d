// Package user holds the runAsUser strategies of a PodSecurityPolicy: MustRunAs (uid in
// ranges, defaulted to the first range's minimum), MustRunAsNonRoot and RunAsAny.
package user

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	psputil "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/util"
)

// RunAsUserStrategy defaults and checks a container's user.
type RunAsUserStrategy interface {
	// Generate returns a uid for a container that has none (neither its own nor the pod's),
	// or nil when the strategy has no default. The pointer is always freshly allocated.
	Generate(pod *api.Pod, container *api.Container) (*int64, error)
	// Validate checks the container's effective runAsNonRoot and runAsUser (the container's
	// value, else the pod's). scPath is the container's securityContext path.
	Validate(scPath *field.Path, pod *api.Pod, container *api.Container, runAsNonRoot *bool, runAsUser *int64) field.ErrorList
}

var (
	_ RunAsUserStrategy = &mustRunAs{}
	_ RunAsUserStrategy = nonRoot{}
	_ RunAsUserStrategy = runAsAny{}
)

type mustRunAs struct {
	ranges []policy.IDRange
}

// NewMustRunAs requires the uid to lie in one of opts.Ranges.
func NewMustRunAs(opts *policy.RunAsUserStrategyOptions) (RunAsUserStrategy, error) {
	if opts == nil {
		return nil, fmt.Errorf("MustRunAs requires run as user options")
	}
	if len(opts.Ranges) == 0 {
		return nil, fmt.Errorf("MustRunAs requires at least one range")
	}
	return &mustRunAs{ranges: psputil.CopyRanges(opts.Ranges)}, nil
}

func (s *mustRunAs) Generate(_ *api.Pod, _ *api.Container) (*int64, error) {
	uid := s.ranges[0].Min
	return &uid, nil
}

func (s *mustRunAs) Validate(scPath *field.Path, _ *api.Pod, _ *api.Container, _ *bool, runAsUser *int64) field.ErrorList {
	if runAsUser == nil {
		return field.ErrorList{field.Required(scPath.Child("runAsUser"), "")}
	}
	if !psputil.InRanges(*runAsUser, s.ranges) {
		return field.ErrorList{field.Invalid(scPath.Child("runAsUser"), *runAsUser,
			"must be in the ranges: "+psputil.FormatRanges(s.ranges))}
	}
	return nil
}

type nonRoot struct{}

// NewRunAsNonRoot requires the container not to run as uid 0. It has no uid to default to;
// the provider instead sets runAsNonRoot, so the kubelet checks the image's user.
func NewRunAsNonRoot(_ *policy.RunAsUserStrategyOptions) (RunAsUserStrategy, error) {
	return nonRoot{}, nil
}

func (nonRoot) Generate(_ *api.Pod, _ *api.Container) (*int64, error) { return nil, nil }

func (nonRoot) Validate(scPath *field.Path, _ *api.Pod, _ *api.Container, runAsNonRoot *bool, runAsUser *int64) field.ErrorList {
	if runAsNonRoot == nil && runAsUser == nil {
		return field.ErrorList{field.Required(scPath.Child("runAsNonRoot"), "must be true")}
	}
	if runAsNonRoot != nil && !*runAsNonRoot {
		return field.ErrorList{field.Invalid(scPath.Child("runAsNonRoot"), *runAsNonRoot, "must be true")}
	}
	if runAsUser != nil && *runAsUser == 0 {
		return field.ErrorList{field.Invalid(scPath.Child("runAsUser"), *runAsUser, "running with the root UID is forbidden")}
	}
	return nil
}

type runAsAny struct{}

// NewRunAsAny allows any user and defaults nothing.
func NewRunAsAny(_ *policy.RunAsUserStrategyOptions) (RunAsUserStrategy, error) {
	return runAsAny{}, nil
}

func (runAsAny) Generate(_ *api.Pod, _ *api.Container) (*int64, error) { return nil, nil }

func (runAsAny) Validate(_ *field.Path, _ *api.Pod, _ *api.Container, _ *bool, _ *int64) field.ErrorList {
	return nil
}
