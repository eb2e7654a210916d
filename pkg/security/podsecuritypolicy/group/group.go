// Package group holds the group strategies shared by runAsGroup, supplementalGroups and
// fsGroup: MustRunAs (required, in ranges, defaulted to the first range's minimum),
// MayRunAs (optional, but in ranges when set; no default) and RunAsAny.
package group

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	psputil "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/util"
)

// GroupStrategy defaults and checks group IDs.
type GroupStrategy interface {
	// Generate returns groups for a pod that has none (supplementalGroups), or nil.
	Generate(pod *api.Pod) ([]int64, error)
	// GenerateSingle returns one group for an unset single-valued field (fsGroup,
	// runAsGroup), or nil. The pointer is always freshly allocated.
	GenerateSingle(pod *api.Pod) (*int64, error)
	// Validate checks a list of groups; fldPath names the list.
	Validate(fldPath *field.Path, pod *api.Pod, groups []int64) field.ErrorList
	// ValidateSingle checks a single-valued field; nil means unset. It exists beside
	// Validate so callers need not build a one-element slice per pod.
	ValidateSingle(fldPath *field.Path, pod *api.Pod, group *int64) field.ErrorList
}

var (
	_ GroupStrategy = &rangeStrategy{}
	_ GroupStrategy = runAsAny{}
)

// rangeStrategy implements MustRunAs (required) and MayRunAs (not required, no default).
type rangeStrategy struct {
	ranges   []policy.IDRange
	required bool
}

// NewMustRunAs requires groups to be set and within ranges, defaulting to ranges[0].Min.
func NewMustRunAs(ranges []policy.IDRange) (GroupStrategy, error) {
	if len(ranges) == 0 {
		return nil, fmt.Errorf("ranges must be supplied for MustRunAs")
	}
	return &rangeStrategy{ranges: psputil.CopyRanges(ranges), required: true}, nil
}

// NewMayRunAs allows groups to be unset, but when set they must lie within ranges.
func NewMayRunAs(ranges []policy.IDRange) (GroupStrategy, error) {
	if len(ranges) == 0 {
		return nil, fmt.Errorf("ranges must be supplied for MayRunAs")
	}
	return &rangeStrategy{ranges: psputil.CopyRanges(ranges)}, nil
}

func (s *rangeStrategy) Generate(_ *api.Pod) ([]int64, error) {
	if !s.required {
		return nil, nil
	}
	return []int64{s.ranges[0].Min}, nil
}

func (s *rangeStrategy) GenerateSingle(_ *api.Pod) (*int64, error) {
	if !s.required {
		return nil, nil
	}
	g := s.ranges[0].Min
	return &g, nil
}

func (s *rangeStrategy) Validate(fldPath *field.Path, _ *api.Pod, groups []int64) field.ErrorList {
	var errs field.ErrorList
	if len(groups) == 0 && s.required {
		errs = append(errs, field.Invalid(fldPath, groups, "unable to validate empty groups against required ranges"))
	}
	for i, g := range groups {
		if !psputil.InRanges(g, s.ranges) {
			errs = append(errs, field.Invalid(fldPath.Index(i), g,
				fmt.Sprintf("group %d must be in the ranges: %s", g, psputil.FormatRanges(s.ranges))))
		}
	}
	return errs
}

func (s *rangeStrategy) ValidateSingle(fldPath *field.Path, _ *api.Pod, group *int64) field.ErrorList {
	if group == nil {
		if s.required {
			// 1.24's words and kind: it judged a single value as a list of one or none.
			return field.ErrorList{field.Invalid(fldPath, []int64(nil), "unable to validate empty groups against required ranges")}
		}
		return nil
	}
	if !psputil.InRanges(*group, s.ranges) {
		return field.ErrorList{field.Invalid(fldPath, *group,
			fmt.Sprintf("group %d must be in the ranges: %s", *group, psputil.FormatRanges(s.ranges)))}
	}
	return nil
}

type runAsAny struct{}

// NewRunAsAny allows any groups and defaults none.
func NewRunAsAny() (GroupStrategy, error) { return runAsAny{}, nil }

func (runAsAny) Generate(_ *api.Pod) ([]int64, error)                    { return nil, nil }
func (runAsAny) GenerateSingle(_ *api.Pod) (*int64, error)               { return nil, nil }
func (runAsAny) Validate(*field.Path, *api.Pod, []int64) field.ErrorList { return nil }
func (runAsAny) ValidateSingle(*field.Path, *api.Pod, *int64) field.ErrorList {
	return nil
}
