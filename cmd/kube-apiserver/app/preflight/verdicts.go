package preflight

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"

	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
	"github.com/portcullis-k8s/portcullis/pkg/releases"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/podsecuritypolicy"
)

// Preflight's verdict is split in two: whether the server starts (Problems: flags, files,
// image, sandbox), and what it refuses that stock admits (Refusals), which is the operator's
// choice and no problem, but must be known before the swap. RollbackChanges is the same
// question asked of a rollback: every verdict that changes when stock runs instead.

// judge fills Refusals and RollbackChanges from the chains that would load and the
// Portcullis entry's settings. It needs a checked command line.
func (r *PreflightReport) judge() {
	if !r.checkedCommandLine || (r.Mutating == nil && r.Validating == nil) {
		return
	}
	enabled := func(name string) bool {
		return slices.Contains(r.Mutating, name) || slices.Contains(r.Validating, name)
	}
	var modes []portcullisapi.PluginEnforcement
	if r.portcullis != nil {
		modes = r.portcullis.EnforcementModes
	}
	// Going back means an earlier release of this binary's own Kubernetes minor: its line
	// names when each plugin and field came to it (pkg/releases).
	minor := kubecompat.Minor
	var stopped []string
	for _, p := range portcullisadmission.Plugins() {
		if !enabled(p.Name) {
			continue
		}
		stopped = append(stopped, p.Name)
		if since, earlier := releases.FirstOnLine(minor, p.Since); earlier {
			r.Notes = append(r.Notes, fmt.Sprintf("%s is new in %s: a Portcullis release before it refuses the name in the flags; take it out before going back to one", p.Name, since))
		}
		soften := modeOf(modes, p.Name)
		refuses := p.Refuses
		if p.RefusesWith != nil {
			// The configuration was checked with the command line: an error here is
			// the file's, reported there.
			if entry, err := pluginEntry(r.AdmissionConfigFile, p.Name); err == nil {
				refuses, _ = p.RefusesWith(entry)
			}
		}
		if refuses == "" {
			continue
		}
		if soften.Softens() {
			r.Notes = append(r.Notes, fmt.Sprintf("%s runs in enforcement mode %s: it admits what it would refuse (%s), and says so; in Deny it would refuse it", p.Name, soften.Label, refuses))
			continue
		}
		r.Refusals = append(r.Refusals, fmt.Sprintf("%s (enforcing): %s", p.Name, refuses))
	}
	if len(stopped) > 0 {
		r.RollbackChanges = append(r.RollbackChanges, fmt.Sprintf("%s stop: what they refuse is admitted, what they set is no longer set (docs/operating.md, 4)", strings.Join(stopped, ", ")))
	}
	// Upstream's plugins in Warn or Audit deny again under stock, which reads no modes.
	for _, m := range modes {
		if portcullisadmission.IsOurs(m.Name) || !enabled(m.Name) {
			continue
		}
		if s := enforcement.SoftenFor(m.Modes); s.Softens() {
			r.RollbackChanges = append(r.RollbackChanges, fmt.Sprintf("%s runs in enforcement mode %s here; stock denies what it refuses", m.Name, s.Label))
		}
	}
	if r.portcullis == nil {
		return
	}
	for _, f := range r.portcullis.NewerFields {
		if since, earlier := releases.FirstOnLine(minor, f.Since); earlier {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %s is new in %s: a Portcullis release before it refuses this file (strict decoding); take the field out before going back to one", r.portcullis.Entry, f.Path, since))
		}
	}
	for _, phase := range []struct {
		name       string
		validating bool
	}{{"mutating", false}, {"validating", true}} {
		d := r.portcullis.Dispatch(phase.validating)
		if d == nil {
			continue
		}
		for _, m := range sortedWebhookModes(d) {
			s := enforcement.SoftenFor(m.Modes)
			if !s.Softens() {
				continue
			}
			what := "its denials refuse requests and its failures follow its failurePolicy"
			if !phase.validating {
				what = "its patches are applied, its denials refuse requests and its failures follow its failurePolicy"
			}
			r.RollbackChanges = append(r.RollbackChanges, fmt.Sprintf("%s webhook %s of %s runs in mode %s here (a shadow); stock enforces it: %s", phase.name, m.Webhook, m.Configuration, s.Label, what))
		}
		if d.CircuitBreaker != nil {
			r.Refusals = append(r.Refusals, fmt.Sprintf("the %s webhooks' circuit breakers: a request to a failurePolicy Fail webhook whose breaker is open is refused without calling it, where stock calls the webhook and admits the request if it answers", phase.name))
			r.RollbackChanges = append(r.RollbackChanges, fmt.Sprintf("the %s webhooks' circuit breakers stop: a failing webhook is called on every request, and its failurePolicy decides", phase.name))
		}
		if d.TimeBudget != nil {
			r.Refusals = append(r.Refusals, fmt.Sprintf("the %s webhooks' time budget: a request whose budget leaves a failurePolicy Fail webhook no time, or too little for its answer, is refused, where stock calls the webhook with its whole timeout", phase.name))
			r.RollbackChanges = append(r.RollbackChanges, fmt.Sprintf("the %s webhooks' time budget stops: each webhook is called with its whole timeout", phase.name))
		}
	}
}

// modeOf returns a plugin's enforcement mode (the zero Soften: Deny).
func modeOf(modes []portcullisapi.PluginEnforcement, name string) enforcement.Soften {
	for _, m := range modes {
		if m.Name == name {
			return enforcement.SoftenFor(m.Modes)
		}
	}
	return enforcement.Soften{}
}

// podSecurityPolicyEnforces reports whether the command line checked enables
// PodSecurityPolicy in mode Deny: then what --podsecuritypolicy finds it would refuse is
// refused at the swap.
func (r *PreflightReport) podSecurityPolicyEnforces() bool {
	if !slices.Contains(r.Validating, podsecuritypolicy.PluginName) {
		return false
	}
	return !modeOf(r.enforcementModes(), podsecuritypolicy.PluginName).Softens()
}

// enforcementModes are the Portcullis entry's plugin modes, none when it was not read.
func (r *PreflightReport) enforcementModes() []portcullisapi.PluginEnforcement {
	if r.portcullis == nil {
		return nil
	}
	return r.portcullis.EnforcementModes
}

// sortedWebhookModes are the webhooks' enforcement modes of one plugin's dispatch settings,
// by configuration and then webhook (validation keeps each pair once).
func sortedWebhookModes(d *portcullisapi.WebhookDispatchSettings) []portcullisapi.WebhookEnforcement {
	return slices.SortedFunc(slices.Values(d.EnforcementModes), func(a, b portcullisapi.WebhookEnforcement) int {
		return cmp.Or(strings.Compare(a.Configuration, b.Configuration), strings.Compare(a.Webhook, b.Webhook))
	})
}
