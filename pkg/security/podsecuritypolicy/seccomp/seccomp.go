// Package seccomp holds the seccomp strategy of a PodSecurityPolicy. The policy speaks in
// 1.24's annotation profile names (its allowedProfileNames and defaultProfileName
// annotations); pods in 1.37 speak in securityContext.seccompProfile fields, with the legacy
// seccomp annotations still accepted by pod validation. See the parent package's doc.go.
package seccomp

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	psputil "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/util"
)

// Profile names used in policy annotations and legacy pod annotations.
const (
	AllowAny            = "*"
	RuntimeDefault      = "runtime/default"
	DockerDefault       = "docker/default" // an old spelling of runtime/default
	Unconfined          = "unconfined"
	LocalhostNamePrefix = "localhost/"
)

// Strategy defaults and checks seccomp profiles.
type Strategy interface {
	// Generate returns the pod-level profile to set when the pod has no
	// spec.securityContext.seccompProfile: the profile named by the pod's legacy annotation if
	// it has one (so field and annotation agree), else the policy's default; nil when neither.
	Generate(pod *api.Pod) (*api.SeccompProfile, error)
	// ValidatePod checks the pod-level profile (field, else legacy annotation).
	ValidatePod(pod *api.Pod) field.ErrorList
	// ValidateContainer checks a container's own profile (field, else legacy annotation);
	// a container that inherits the pod's profile is covered by ValidatePod.
	ValidateContainer(pod *api.Pod, container *api.Container, scPath *field.Path) field.ErrorList
}

var _ Strategy = &strategy{}

// profile is a parsed profile; the zero value means "none".
type profile struct {
	typ       api.SeccompProfileType
	localhost string
}

func (p profile) String() string {
	switch p.typ {
	case api.SeccompProfileTypeRuntimeDefault:
		return RuntimeDefault
	case api.SeccompProfileTypeUnconfined:
		return Unconfined
	case api.SeccompProfileTypeLocalhost:
		return LocalhostNamePrefix + p.localhost
	}
	return string(p.typ)
}

// parseName parses an annotation profile name without allocating.
func parseName(name string) (profile, bool) {
	switch name {
	case RuntimeDefault, DockerDefault:
		return profile{typ: api.SeccompProfileTypeRuntimeDefault}, true
	case Unconfined:
		return profile{typ: api.SeccompProfileTypeUnconfined}, true
	}
	if l, ok := strings.CutPrefix(name, LocalhostNamePrefix); ok && l != "" {
		return profile{typ: api.SeccompProfileTypeLocalhost, localhost: l}, true
	}
	return profile{}, false
}

func fromField(f *api.SeccompProfile) profile {
	p := profile{typ: f.Type}
	if f.LocalhostProfile != nil {
		p.localhost = *f.LocalhostProfile
	}
	return p
}

func (p profile) toField() *api.SeccompProfile {
	f := &api.SeccompProfile{Type: p.typ}
	if p.typ == api.SeccompProfileTypeLocalhost {
		l := p.localhost
		f.LocalhostProfile = &l
	}
	return f
}

type strategy struct {
	defaultProfile *profile
	allowAny       bool
	allowed        []profile
	// allowedString is the annotation as written, for messages.
	allowedString string
}

// NewStrategy builds the strategy from a policy's annotations. Allowed names that do not
// parse can never match and are ignored; a default that does not parse is an error, because
// it would be written into every pod.
func NewStrategy(pspAnnotations map[string]string) (Strategy, error) {
	s := &strategy{}
	if d := strings.TrimSpace(pspAnnotations[policy.SeccompDefaultProfileAnnotationKey]); d != "" {
		p, ok := parseName(d)
		if !ok {
			return nil, fmt.Errorf("invalid seccomp default profile %q in annotation %s", d, policy.SeccompDefaultProfileAnnotationKey)
		}
		s.defaultProfile = &p
	}
	if allowed, ok := pspAnnotations[policy.SeccompAllowedProfilesAnnotationKey]; ok {
		s.allowedString = allowed
		for _, n := range strings.Split(allowed, ",") {
			n = strings.TrimSpace(n)
			if n == AllowAny {
				s.allowAny = true
				continue
			}
			if p, ok := parseName(n); ok {
				s.allowed = append(s.allowed, p)
			}
		}
	}
	return s, nil
}

func isWindows(pod *api.Pod) bool {
	return pod.Spec.OS != nil && pod.Spec.OS.Name == api.Windows
}

func (s *strategy) Generate(pod *api.Pod) (*api.SeccompProfile, error) {
	// Windows pods may not carry seccomp fields (pod validation rejects them).
	if isWindows(pod) {
		return nil, nil
	}
	if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.SeccompProfile != nil {
		return nil, nil
	}
	if ann := pod.Annotations[api.SeccompPodAnnotationKey]; ann != "" {
		if p, ok := parseName(ann); ok {
			return p.toField(), nil
		}
		// An unparsable annotation is left for validation to reject; a default here would
		// only produce a second, confusing mismatch error.
		return nil, nil
	}
	if s.defaultProfile == nil {
		return nil, nil
	}
	return s.defaultProfile.toField(), nil
}

var (
	podFieldPath      = field.NewPath("spec", "securityContext", "seccompProfile")
	podAnnotationPath = field.NewPath("metadata", "annotations").Key(api.SeccompPodAnnotationKey)
)

func (s *strategy) ValidatePod(pod *api.Pod) field.ErrorList {
	var f *api.SeccompProfile
	if pod.Spec.SecurityContext != nil {
		f = pod.Spec.SecurityContext.SeccompProfile
	}
	ann := pod.Annotations[api.SeccompPodAnnotationKey]
	switch {
	case f != nil:
		return s.checkField(f, ann, podFieldPath)
	case ann != "":
		return s.checkName(ann, podAnnotationPath)
	case isWindows(pod):
		return nil
	default:
		return s.check(profile{}, "", podFieldPath)
	}
}

func (s *strategy) ValidateContainer(pod *api.Pod, c *api.Container, scPath *field.Path) field.ErrorList {
	ann, _ := psputil.LookupAnnotation(pod.Annotations, api.SeccompContainerAnnotationKeyPrefix, c.Name)
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		return s.checkField(c.SecurityContext.SeccompProfile, ann, scPath.Child("seccompProfile"))
	}
	if ann != "" {
		return s.checkName(ann, field.NewPath("metadata", "annotations").Key(api.SeccompContainerAnnotationKeyPrefix+c.Name))
	}
	return nil
}

// checkField checks a field and, as pod validation does, that a legacy annotation beside it
// names the same profile.
func (s *strategy) checkField(f *api.SeccompProfile, ann string, path *field.Path) field.ErrorList {
	p := fromField(f)
	errs := s.check(p, "", path)
	if ann != "" {
		if ap, ok := parseName(ann); !ok || ap != p {
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("seccomp profile %s in the field does not match %q in the legacy annotation", p, ann)))
		}
	}
	return errs
}

func (s *strategy) checkName(name string, path *field.Path) field.ErrorList {
	p, ok := parseName(name)
	if !ok {
		// Unparsable: only "*" can allow it; pod validation rejects it regardless.
		return s.check(profile{typ: "invalid"}, name, path)
	}
	return s.check(p, "", path)
}

// check applies the policy to p; raw is the name as written when p did not parse.
func (s *strategy) check(p profile, raw string, path *field.Path) field.ErrorList {
	if s.allowAny {
		return nil
	}
	set := p != profile{}
	if len(s.allowed) == 0 {
		if set {
			return field.ErrorList{field.Forbidden(path, "seccomp may not be set")}
		}
		return nil
	}
	if set {
		for _, a := range s.allowed {
			if a == p {
				return nil
			}
		}
	}
	name := raw
	if name == "" {
		name = p.String()
	}
	if !set {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("seccomp profile must be set. Valid values are %s", s.allowedString))}
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf("%s is not an allowed seccomp profile. Valid values are %s", name, s.allowedString))}
}
