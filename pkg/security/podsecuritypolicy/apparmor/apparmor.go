// Package apparmor holds the AppArmor strategy of a PodSecurityPolicy. The policy speaks in
// 1.24's annotation profile names; pods in 1.37 speak in securityContext.appArmorProfile
// fields (pod and container), with the legacy per-container annotation still synced into the
// field by the pod registry. See the parent package's doc.go.
package apparmor

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	psputil "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/util"
)

// Strategy defaults and checks AppArmor profiles.
type Strategy interface {
	// Generate returns the pod-level profile to set, or nil: the policy's default when the
	// pod has no pod-level profile and some container has no profile of its own.
	Generate(pod *api.Pod) (*api.AppArmorProfile, error)
	// ValidatePod checks spec.securityContext.appArmorProfile.
	ValidatePod(pod *api.Pod) field.ErrorList
	// ValidateContainer checks a container's own profile (field, else legacy annotation),
	// and that it has one at all when the policy restricts profiles.
	ValidateContainer(pod *api.Pod, container *api.Container, scPath *field.Path) field.ErrorList
}

var _ Strategy = &strategy{}

type profile struct {
	typ       api.AppArmorProfileType
	localhost string
}

func (p profile) String() string {
	switch p.typ {
	case api.AppArmorProfileTypeRuntimeDefault:
		return api.DeprecatedAppArmorAnnotationValueRuntimeDefault
	case api.AppArmorProfileTypeUnconfined:
		return api.DeprecatedAppArmorAnnotationValueUnconfined
	case api.AppArmorProfileTypeLocalhost:
		return api.DeprecatedAppArmorAnnotationValueLocalhostPrefix + p.localhost
	}
	return string(p.typ)
}

func parseName(name string) (profile, bool) {
	switch name {
	case api.DeprecatedAppArmorAnnotationValueRuntimeDefault:
		return profile{typ: api.AppArmorProfileTypeRuntimeDefault}, true
	case api.DeprecatedAppArmorAnnotationValueUnconfined:
		return profile{typ: api.AppArmorProfileTypeUnconfined}, true
	}
	if l, ok := strings.CutPrefix(name, api.DeprecatedAppArmorAnnotationValueLocalhostPrefix); ok && l != "" {
		return profile{typ: api.AppArmorProfileTypeLocalhost, localhost: l}, true
	}
	return profile{}, false
}

func fromField(f *api.AppArmorProfile) profile {
	p := profile{typ: f.Type}
	if f.LocalhostProfile != nil {
		p.localhost = *f.LocalhostProfile
	}
	return p
}

func (p profile) toField() *api.AppArmorProfile {
	f := &api.AppArmorProfile{Type: p.typ}
	if p.typ == api.AppArmorProfileTypeLocalhost {
		l := p.localhost
		f.LocalhostProfile = &l
	}
	return f
}

type strategy struct {
	defaultProfile *profile
	// restricted is false when the policy has no allowedProfileNames annotation: then any
	// profile (or none) is allowed, as in 1.24.
	restricted    bool
	allowed       []profile
	allowedString string
}

// NewStrategy builds the strategy from a policy's annotations.
func NewStrategy(pspAnnotations map[string]string) (Strategy, error) {
	s := &strategy{}
	if d := strings.TrimSpace(pspAnnotations[policy.AppArmorDefaultProfileAnnotationKey]); d != "" {
		p, ok := parseName(d)
		if !ok {
			return nil, fmt.Errorf("invalid AppArmor default profile %q in annotation %s", d, policy.AppArmorDefaultProfileAnnotationKey)
		}
		s.defaultProfile = &p
	}
	if allowed, ok := pspAnnotations[policy.AppArmorAllowedProfilesAnnotationKey]; ok {
		s.restricted = true
		s.allowedString = allowed
		for _, n := range strings.Split(allowed, ",") {
			if p, ok := parseName(strings.TrimSpace(n)); ok {
				s.allowed = append(s.allowed, p)
			}
		}
	}
	return s, nil
}

func isWindows(pod *api.Pod) bool {
	return pod.Spec.OS != nil && pod.Spec.OS.Name == api.Windows
}

// ownProfile reports whether the container names a profile itself, by field or annotation.
func ownProfile(pod *api.Pod, c *api.Container) bool {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return true
	}
	_, ok := psputil.LookupAnnotation(pod.Annotations, api.DeprecatedAppArmorAnnotationKeyPrefix, c.Name)
	return ok
}

func (s *strategy) Generate(pod *api.Pod) (*api.AppArmorProfile, error) {
	// Windows pods may not carry AppArmor fields (pod validation rejects them).
	if s.defaultProfile == nil || isWindows(pod) {
		return nil, nil
	}
	if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.AppArmorProfile != nil {
		return nil, nil
	}
	for i := range pod.Spec.InitContainers {
		if !ownProfile(pod, &pod.Spec.InitContainers[i]) {
			return s.defaultProfile.toField(), nil
		}
	}
	for i := range pod.Spec.Containers {
		if !ownProfile(pod, &pod.Spec.Containers[i]) {
			return s.defaultProfile.toField(), nil
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if !ownProfile(pod, (*api.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)) {
			return s.defaultProfile.toField(), nil
		}
	}
	return nil, nil
}

var podFieldPath = field.NewPath("spec", "securityContext", "appArmorProfile")

func (s *strategy) ValidatePod(pod *api.Pod) field.ErrorList {
	if !s.restricted || pod.Spec.SecurityContext == nil || pod.Spec.SecurityContext.AppArmorProfile == nil {
		return nil
	}
	return s.check(fromField(pod.Spec.SecurityContext.AppArmorProfile), "", podFieldPath)
}

func (s *strategy) ValidateContainer(pod *api.Pod, c *api.Container, scPath *field.Path) field.ErrorList {
	if !s.restricted {
		return nil
	}
	ann, hasAnn := psputil.LookupAnnotation(pod.Annotations, api.DeprecatedAppArmorAnnotationKeyPrefix, c.Name)
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		path := scPath.Child("appArmorProfile")
		p := fromField(c.SecurityContext.AppArmorProfile)
		errs := s.check(p, "", path)
		if hasAnn {
			if ap, ok := parseName(ann); !ok || ap != p {
				errs = append(errs, field.Forbidden(path, fmt.Sprintf("AppArmor profile %s in the field does not match %q in the legacy annotation", p, ann)))
			}
		}
		return errs
	}
	if hasAnn {
		path := field.NewPath("metadata", "annotations").Key(api.DeprecatedAppArmorAnnotationKeyPrefix + c.Name)
		p, ok := parseName(ann)
		if !ok {
			return field.ErrorList{field.Forbidden(path, fmt.Sprintf("%s is not an allowed profile. Allowed values: %q", ann, s.allowedString))}
		}
		return s.check(p, ann, path)
	}
	if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.AppArmorProfile != nil {
		return nil // inherits the pod's, checked by ValidatePod
	}
	// As in 1.24, an allowedProfileNames annotation, even an empty one, means a profile must
	// be set: an empty list admits no container.
	if !isWindows(pod) {
		return field.ErrorList{field.Forbidden(scPath.Child("appArmorProfile"), "AppArmor profile must be set")}
	}
	return nil
}

func (s *strategy) check(p profile, raw string, path *field.Path) field.ErrorList {
	for _, a := range s.allowed {
		if a == p {
			return nil
		}
	}
	name := raw
	if name == "" {
		name = p.String()
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf("%s is not an allowed profile. Allowed values: %q", name, s.allowedString))}
}
