// Package sysctl holds the sysctls strategy of a PodSecurityPolicy. A pod's sysctl is
// rejected when it matches forbiddenSysctls; otherwise it is allowed when it is on the safe
// list or matches allowedUnsafeSysctls. Patterns are exact names, "*", or "prefix*".
package sysctl

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// safeSysctls is the safe set PodSecurityPolicy used in 1.24 (the kubelet's of that time):
// a pod may set these without allowedUnsafeSysctls naming them. The kubelet has called more
// sysctls safe since; a policy written for 1.24 did not mean to allow those, so they need
// allowedUnsafeSysctls here as they did then. Fixed in code on purpose: it must not depend on
// the API server host or version.
var safeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
}

// SafeSysctlAllowlist returns a copy of the safe sysctl names.
func SafeSysctlAllowlist() []string {
	return append([]string(nil), safeSysctls...)
}

// SysctlsStrategy checks a pod's sysctls.
type SysctlsStrategy interface {
	// Validate checks spec.securityContext.sysctls.
	Validate(pod *api.Pod) field.ErrorList
}

var _ SysctlsStrategy = &mustMatchPatterns{}

type mustMatchPatterns struct {
	safe          []string
	allowedUnsafe []string
	forbidden     []string
}

// NewMustMatchPatterns builds the strategy; all three lists hold names or patterns.
func NewMustMatchPatterns(safe, allowedUnsafe, forbidden []string) SysctlsStrategy {
	return &mustMatchPatterns{
		safe:          normalizeAll(safe),
		allowedUnsafe: normalizeAll(allowedUnsafe),
		forbidden:     normalizeAll(forbidden),
	}
}

func normalizeAll(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		out = append(out, Normalize(s))
	}
	return out
}

// Normalize returns a sysctl name in dot-separated form. Pods may write "net/ipv4/tcp_rmem";
// as the kubelet does, when the first separator is a slash, dots and slashes are swapped
// ("net/ipv4/conf/eno2.100/rp_filter" is "net.ipv4.conf.eno2/100.rp_filter"). Without this
// a slash spelling would slip past a dotted forbiddenSysctls entry.
func Normalize(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

// matches reports whether name matches any pattern ("*", "prefix*" or an exact name).
func matches(name string, patterns []string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if name == p {
			return true
		}
	}
	return false
}

var sysctlsPath = field.NewPath("spec", "securityContext", "sysctls")

func (s *mustMatchPatterns) Validate(pod *api.Pod) field.ErrorList {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	var errs field.ErrorList
	for i, sc := range pod.Spec.SecurityContext.Sysctls {
		name := Normalize(sc.Name)
		switch {
		case matches(name, s.forbidden):
			errs = append(errs, field.Forbidden(sysctlsPath.Index(i), fmt.Sprintf("sysctl %q is not allowed", sc.Name)))
		case matches(name, s.safe), matches(name, s.allowedUnsafe):
		default:
			errs = append(errs, field.Forbidden(sysctlsPath.Index(i), fmt.Sprintf("unsafe sysctl %q is not allowed", sc.Name)))
		}
	}
	return errs
}
