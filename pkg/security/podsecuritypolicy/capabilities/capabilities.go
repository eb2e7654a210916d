// Package capabilities holds the capabilities strategy of a PodSecurityPolicy:
// defaultAddCapabilities are added unless the container drops them, requiredDropCapabilities
// are always dropped, and only default or allowed capabilities ("*" for any) may be added.
package capabilities

import (
	"fmt"
	"strings"

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

// capAll is what runtimes accept (case-insensitively) to mean every capability.
const capAll = "ALL"

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
	s.allowAll = contains(s.allowed, policy.AllowAllCapabilities)
	return s, nil
}

func contains(caps []api.Capability, c api.Capability) bool {
	for _, x := range caps {
		if x == c {
			return true
		}
	}
	return false
}

// drops reports whether a drop list removes c, either by name or by dropping ALL.
func drops(drop []api.Capability, c api.Capability) bool {
	for _, x := range drop {
		if x == c || strings.EqualFold(string(x), capAll) {
			return true
		}
	}
	return false
}

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
	// allocation; the container's own order is kept and the policy's entries appended.
	var newAdd, newDrop []api.Capability
	changed := false
	for _, c := range s.defaultAdd {
		// A container that drops a default capability has opted out of it.
		if !contains(add, c) && !contains(drop, c) && !contains(newAdd, c) {
			changed = true
			newAdd = append(newAdd, c)
		}
	}
	for _, c := range s.requiredDrop {
		if !drops(drop, c) && !contains(newDrop, c) {
			changed = true
			newDrop = append(newDrop, c)
		}
	}
	if !changed {
		return own, nil
	}
	out := &api.Capabilities{}
	if len(add)+len(newAdd) > 0 {
		out.Add = append(append(make([]api.Capability, 0, len(add)+len(newAdd)), add...), newAdd...)
	}
	if len(drop)+len(newDrop) > 0 {
		out.Drop = append(append(make([]api.Capability, 0, len(drop)+len(newDrop)), drop...), newDrop...)
	}
	return out, nil
}

func (s *defaultCapabilities) Validate(fldPath *field.Path, _ *api.Pod, _ *api.Container, caps *api.Capabilities) field.ErrorList {
	if caps == nil {
		// Nothing requested and nothing the policy insists on: fine.
		if len(s.defaultAdd) == 0 && len(s.requiredDrop) == 0 {
			return nil
		}
		return field.ErrorList{field.Invalid(fldPath, caps, "required capabilities are not set on the securityContext")}
	}

	var errs field.ErrorList
	if !s.allowAll {
		for i, c := range caps.Add {
			if !contains(s.defaultAdd, c) && !contains(s.allowed, c) {
				errs = append(errs, field.Invalid(fldPath.Child("add").Index(i), string(c), "capability may not be added"))
			}
		}
	}
	// Unlike 1.24, "*" in allowedCapabilities does not waive requiredDropCapabilities: a
	// policy that names required drops means them.
	for _, c := range s.requiredDrop {
		if !drops(caps.Drop, c) {
			errs = append(errs, field.Invalid(fldPath.Child("drop"), caps.Drop,
				fmt.Sprintf("%s is required to be dropped but was not found", c)))
		}
	}
	return errs
}
