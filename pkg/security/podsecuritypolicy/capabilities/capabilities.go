// Package capabilities holds the capabilities strategy of a PodSecurityPolicy:
// defaultAddCapabilities are added unless the container drops them, requiredDropCapabilities
// are always dropped, and only default or allowed capabilities ("*" for any) may be added.
package capabilities

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

// Strategy defaults and checks a container's capabilities.
type Strategy interface {
	// Generate returns the container's capabilities with the policy's defaults and required
	// drops merged in; it returns the container's own object when nothing needs to change.
	Generate(pod *api.Pod, container *api.Container) (*api.Capabilities, error)
	// Validate checks caps; fldPath names the capabilities field.
	Validate(fldPath *field.Path, pod *api.Pod, container *api.Container, caps *api.Capabilities) field.ErrorList
}

var _ Strategy = &defaultCapabilities{}

type defaultCapabilities struct {
	defaultAdd   []api.Capability
	requiredDrop []api.Capability
	allowed      []api.Capability
	allowAll     bool
}

// NewDefaultCapabilities builds the strategy from the policy's three lists (copied, so the
// strategy never aliases a shared policy object).
func NewDefaultCapabilities(defaultAdd, requiredDrop, allowed []api.Capability) (Strategy, error) {
	s := &defaultCapabilities{
		defaultAdd:   append([]api.Capability(nil), defaultAdd...),
		requiredDrop: append([]api.Capability(nil), requiredDrop...),
		allowed:      append([]api.Capability(nil), allowed...),
	}
	s.allowAll = slices.Contains(s.allowed, policy.AllowAllCapabilities)
	return s, nil
}

// Generate merges as 1.24 did: adds are the container's plus the defaults it does not drop,
// drops the container's plus the required ones, each compared by exact name. When that adds
// nothing the container's own object is returned; otherwise both lists come back as sorted
// sets. (So dropping ALL does not stand in for a required drop: the named capability is
// added to the drops, which makes the policy one that changes the pod.)
func (s *defaultCapabilities) Generate(_ *api.Pod, container *api.Container) (*api.Capabilities, error) {
	var own *api.Capabilities
	if container.SecurityContext != nil {
		own = container.SecurityContext.Capabilities
	}
	var add, drop []api.Capability
	if own != nil {
		add, drop = own.Add, own.Drop
	}
	// Decide first whether anything changes, so an already-compliant container costs no
	// allocation.
	changed := false
	for _, c := range s.defaultAdd {
		if !slices.Contains(add, c) && !slices.Contains(drop, c) {
			changed = true
			break
		}
	}
	for _, c := range s.requiredDrop {
		if changed {
			break
		}
		changed = !slices.Contains(drop, c)
	}
	if !changed {
		return own, nil
	}
	newAdd := slices.Clone(add)
	for _, c := range s.defaultAdd {
		if !slices.Contains(drop, c) {
			newAdd = append(newAdd, c)
		}
	}
	newDrop := append(slices.Clone(drop), s.requiredDrop...)
	return &api.Capabilities{Add: sortedSet(newAdd), Drop: sortedSet(newDrop)}, nil
}

// sortedSet sorts caps and removes repeats in place; an empty list becomes nil.
func sortedSet(caps []api.Capability) []api.Capability {
	if len(caps) == 0 {
		return nil
	}
	slices.Sort(caps)
	return slices.Compact(caps)
}

func (s *defaultCapabilities) Validate(fldPath *field.Path, _ *api.Pod, _ *api.Container, caps *api.Capabilities) field.ErrorList {
	if caps == nil {
		// Nothing requested and nothing the policy insists on: fine.
		if len(s.defaultAdd) == 0 && len(s.requiredDrop) == 0 {
			return nil
		}
		return field.ErrorList{field.Invalid(fldPath, caps, "required capabilities are not set on the securityContext")}
	}
	// "*" allows every capability; policy validation refuses required drops beside it.
	if s.allowAll {
		return nil
	}
	var errs field.ErrorList
	for _, c := range caps.Add {
		if !slices.Contains(s.defaultAdd, c) && !slices.Contains(s.allowed, c) {
			errs = append(errs, field.Invalid(fldPath.Child("add"), string(c), "capability may not be added"))
		}
	}
	for _, c := range s.requiredDrop {
		if !slices.Contains(caps.Drop, c) {
			errs = append(errs, field.Invalid(fldPath.Child("drop"), caps.Drop,
				fmt.Sprintf("%s is required to be dropped but was not found", c)))
		}
	}
	return errs
}
