package portcullisconfig

import (
	"fmt"
	"slices"
	"strings"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// LogValues are the settings in force, as key/value pairs for the start-up log.
func (c *Configuration) LogValues() []any {
	file := c.File
	if file == "" {
		file = "none"
	}
	modes := make([]string, 0, len(c.EnforcementModes))
	for _, m := range c.EnforcementModes {
		names := make([]string, len(m.Modes))
		for i, mode := range m.Modes {
			names[i] = string(mode)
		}
		modes = append(modes, m.Name+"="+strings.Join(names, "+"))
	}
	return []any{
		"admissionConfigFile", file,
		"mutatingWebhookDispatch", c.describeDispatch(false),
		"validatingWebhookDispatch", c.describeDispatch(true),
		"enforcementModes", modes,
		"servedAPIs", append([]string{}, c.ServedAPIs...),
		"admissionTrace", c.traceValue(),
	}
}

// traceValue says whether the trace is on, and how it sees each webhook plugin: as one step
// (upstream's dispatch) or each webhook as a sub-step (ours).
func (c *Configuration) traceValue() string {
	t := c.AdmissionTrace
	if t == nil || (!t.OnRequest && !t.Audit) {
		return "off"
	}
	webhooks := func(validating bool) string {
		if c.Dispatch(validating).Ours() {
			return "each webhook"
		}
		return "the plugin as one step"
	}
	return fmt.Sprintf("onRequest=%t audit=%t mutatingWebhooks=%q validatingWebhooks=%q",
		t.OnRequest, t.Audit, webhooks(false), webhooks(true))
}

// describeDispatch says which dispatch a webhook plugin gets, and with what.
func (c *Configuration) describeDispatch(validating bool) string {
	s := c.Dispatch(validating)
	if !s.Ours() {
		return "upstream's"
	}
	var parts []string
	if b := s.CircuitBreaker; b != nil {
		parts = append(parts, fmt.Sprintf("circuitBreaker{failureThreshold: %d, initialBackoff: %s, maxBackoff: %s}", *b.FailureThreshold, b.InitialBackoff.Duration, b.MaxBackoff.Duration))
	}
	if b := s.TimeBudget; b != nil {
		maxDuration := "none"
		if b.MaxDuration != nil {
			maxDuration = b.MaxDuration.Duration.String()
		}
		parts = append(parts, fmt.Sprintf("timeBudget{deadlineMargin: %s, maxDuration: %s}", b.DeadlineMargin.Duration, maxDuration))
	}
	if s.EarlyExit {
		parts = append(parts, "earlyExit")
	}
	var modes []string
	for _, m := range s.EnforcementModes {
		if !admission.Softens(m.Modes) {
			continue
		}
		mode := fmt.Sprintf("%s/%s=%s", m.Configuration, m.Webhook, softenedLabel(m.Modes))
		if m.MaxWait != nil {
			mode += fmt.Sprintf("(maxWait %s)", m.MaxWait.Duration)
		}
		modes = append(modes, mode)
	}
	if len(modes) > 0 {
		slices.Sort(modes)
		parts = append(parts, "enforcementModes{"+strings.Join(modes, ", ")+"}")
	}
	if p := s.IdempotencyProbe; p != nil {
		parts = append(parts, fmt.Sprintf("idempotencyProbe{oneIn: %d, maxInFlight: %d}", p.OneIn, *p.MaxInFlight))
	}
	if t := c.AdmissionTrace; t != nil && (t.OnRequest || t.Audit) {
		parts = append(parts, "admissionTrace")
	}
	return "Portcullis's: " + strings.Join(parts, ", ")
}

// softenedLabel names softened modes as the metrics do: Warn, Audit or Warn+Audit.
func softenedLabel(modes []admission.EnforcementMode) string {
	var names []string
	for _, m := range []admission.EnforcementMode{admission.EnforcementModeWarn, admission.EnforcementModeAudit} {
		if slices.Contains(modes, m) {
			names = append(names, string(m))
		}
	}
	return strings.Join(names, "+")
}
