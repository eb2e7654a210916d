package admission

import (
	"slices"
	"strings"
	"sync"

	genericadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/server/healthz"
)

// ReadinessReporter is implemented by a plugin of ours that refuses requests until it has
// loaded what it needs (the PodPreset CRD and presets): the server's /readyz includes its
// check, so that a client told "ready" is never refused as not ready.
type ReadinessReporter interface {
	ReadinessCheck() healthz.HealthChecker
}

// ReadinessChecks is an admission decorator that collects the readiness checks of the
// plugins the server enables, as it builds its chain. Put it first among the decorators, so
// it sees the plugins themselves rather than upstream's wrappers.
type ReadinessChecks struct {
	mu     sync.Mutex
	checks []healthz.HealthChecker
}

var _ genericadmission.Decorator = &ReadinessChecks{}

// Decorate records the plugin's readiness check, if it has one, and returns it unchanged.
func (r *ReadinessChecks) Decorate(handler genericadmission.Interface, _ string) genericadmission.Interface {
	if reporter, ok := handler.(ReadinessReporter); ok {
		check := reporter.ReadinessCheck()
		r.mu.Lock()
		defer r.mu.Unlock()
		if !slices.ContainsFunc(r.checks, func(c healthz.HealthChecker) bool { return c.Name() == check.Name() }) {
			r.checks = append(r.checks, check)
		}
	}
	return handler
}

// Checks returns the collected checks, by name.
func (r *ReadinessChecks) Checks() []healthz.HealthChecker {
	r.mu.Lock()
	defer r.mu.Unlock()
	checks := slices.Clone(r.checks)
	slices.SortFunc(checks, func(a, b healthz.HealthChecker) int { return strings.Compare(a.Name(), b.Name()) })
	return checks
}
