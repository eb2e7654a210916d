// Package selinux holds the seLinux strategies of a PodSecurityPolicy: MustRunAs (the
// policy's options, defaulted when unset and required to match) and RunAsAny.
package selinux

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

// SELinuxStrategy defaults and checks SELinux options.
type SELinuxStrategy interface {
	// Generate returns options for a pod (container nil) or container that has none, or nil.
	// The result is always a fresh copy, never the policy's own object.
	Generate(pod *api.Pod, container *api.Container) (*api.SELinuxOptions, error)
	// Validate checks the effective options; fldPath names the seLinuxOptions field.
	Validate(fldPath *field.Path, pod *api.Pod, container *api.Container, options *api.SELinuxOptions) field.ErrorList
}

var (
	_ SELinuxStrategy = &mustRunAs{}
	_ SELinuxStrategy = runAsAny{}
)

type mustRunAs struct {
	opts api.SELinuxOptions
}

// NewMustRunAs requires exactly opts.SELinuxOptions (levels compared with categories as a set).
func NewMustRunAs(opts *policy.SELinuxStrategyOptions) (SELinuxStrategy, error) {
	if opts == nil {
		return nil, fmt.Errorf("MustRunAs requires SELinuxContextStrategyOptions")
	}
	if opts.SELinuxOptions == nil {
		return nil, fmt.Errorf("MustRunAs requires SELinuxOptions")
	}
	return &mustRunAs{opts: *opts.SELinuxOptions}, nil
}

func (s *mustRunAs) Generate(_ *api.Pod, _ *api.Container) (*api.SELinuxOptions, error) {
	o := s.opts
	return &o, nil
}

func (s *mustRunAs) Validate(fldPath *field.Path, _ *api.Pod, _ *api.Container, o *api.SELinuxOptions) field.ErrorList {
	if o == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	if !equalLevels(s.opts.Level, o.Level) {
		errs = append(errs, field.Invalid(fldPath.Child("level"), o.Level, "must be "+s.opts.Level))
	}
	if o.Role != s.opts.Role {
		errs = append(errs, field.Invalid(fldPath.Child("role"), o.Role, "must be "+s.opts.Role))
	}
	if o.Type != s.opts.Type {
		errs = append(errs, field.Invalid(fldPath.Child("type"), o.Type, "must be "+s.opts.Type))
	}
	if o.User != s.opts.User {
		errs = append(errs, field.Invalid(fldPath.Child("user"), o.User, "must be "+s.opts.User))
	}
	return errs
}

// equalLevels compares MLS levels "sensitivity:categories": the sensitivity must be equal and
// the categories equal as a set, because "s0:c1,c0" and "s0:c0,c1" are the same label.
func equalLevels(expected, actual string) bool {
	if expected == actual {
		return true
	}
	eSens, eCats, eOK := strings.Cut(expected, ":")
	aSens, aCats, aOK := strings.Cut(actual, ":")
	if !eOK || !aOK || eSens != aSens {
		return false
	}
	e := strings.Split(eCats, ",")
	a := strings.Split(aCats, ",")
	slices.Sort(e)
	slices.Sort(a)
	return slices.Equal(e, a)
}

type runAsAny struct{}

// NewRunAsAny allows any SELinux options and defaults none.
func NewRunAsAny(_ *policy.SELinuxStrategyOptions) (SELinuxStrategy, error) { return runAsAny{}, nil }

func (runAsAny) Generate(_ *api.Pod, _ *api.Container) (*api.SELinuxOptions, error) {
	return nil, nil
}

func (runAsAny) Validate(*field.Path, *api.Pod, *api.Container, *api.SELinuxOptions) field.ErrorList {
	return nil
}
