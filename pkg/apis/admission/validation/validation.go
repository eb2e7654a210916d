// Package validation validates admission.portcullis.io's internal kinds, defaulted: every
// rule of every kind is here, and each error names its field's path.
package validation

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/version"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// Limits of the webhook dispatch's settings.
const (
	maxFailureThreshold = 1000
	minInitialBackoff   = 100 * time.Millisecond
	maxInitialBackoff   = 10 * time.Minute
	maxMaxBackoff       = time.Hour
	minDeadlineMargin   = 100 * time.Millisecond
	maxDeadlineMargin   = 30 * time.Second
	minMaxDuration      = time.Second
	maxMaxDuration      = 10 * time.Minute
	// maxMaxWait: a webhook's timeoutSeconds is at most 30.
	maxMaxWait          = 30 * time.Second
	maxProbeOneIn       = 1000000
	maxProbeMaxInFlight = 64
)

// ValidatePortcullisConfiguration checks the Portcullis entry's configuration; fldPath is
// where it sits in its file.
func ValidatePortcullisConfiguration(c *admission.PortcullisConfiguration, fldPath *field.Path) field.ErrorList {
	errs := ValidatePluginEnforcement(c.EnforcementModes, fldPath.Child("enforcementModes"))
	if d := c.WebhookDispatch; d != nil {
		path := fldPath.Child("webhookDispatch")
		if d.Mutating != nil {
			errs = append(errs, ValidateWebhookDispatchSettings(d.Mutating, false, path.Child("mutating"))...)
		}
		if d.Validating != nil {
			errs = append(errs, ValidateWebhookDispatchSettings(d.Validating, true, path.Child("validating"))...)
		}
	}
	if t := c.AdmissionTrace; t != nil && !t.OnRequest && !t.Audit {
		errs = append(errs, field.Invalid(fldPath.Child("admissionTrace"), "{}", "set onRequest and/or audit, or leave admissionTrace out"))
	}
	servable := admission.ServableAPIs()
	var seen []schema.GroupVersion
	for i, name := range c.ServedAPIs {
		path := fldPath.Child("servedAPIs").Index(i)
		gv, err := schema.ParseGroupVersion(name)
		switch {
		case err != nil || gv.Group == "" || gv.Version == "":
			errs = append(errs, field.Invalid(path, name, "must be group/version"))
		case !slices.Contains(servable, gv):
			servableNames := make([]string, len(servable))
			for i, gv := range servable {
				servableNames[i] = gv.String()
			}
			errs = append(errs, field.NotSupported(path, name, servableNames))
		case slices.Contains(seen, gv):
			errs = append(errs, field.Duplicate(path, name))
		default:
			seen = append(seen, gv)
		}
	}
	return errs
}

// ValidatePluginEnforcement checks plugins' enforcement modes: names set, unique, neither
// refused (RefusedReason) nor unusable in an audit annotation key; modes Deny alone, or Warn
// and/or Audit.
func ValidatePluginEnforcement(plugins []admission.PluginEnforcement, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, p := range plugins {
		at := fldPath.Index(i)
		switch {
		case p.Name == "":
			errs = append(errs, field.Required(at.Child("name"), "the plugin's name, as in --enable-admission-plugins"))
		case seen[p.Name]:
			errs = append(errs, field.Duplicate(at.Child("name"), p.Name))
		case RefusedReason(p.Name) != "":
			errs = append(errs, field.Forbidden(at.Child("name"), fmt.Sprintf("%s's enforcement mode cannot be changed: %s", p.Name, RefusedReason(p.Name))))
		default:
			for _, msg := range validation.IsQualifiedName(admission.WouldDenyAnnotationKey(p.Name)) {
				errs = append(errs, field.Invalid(at.Child("name"), p.Name, "not usable in the audit annotation key: "+msg))
			}
		}
		seen[p.Name] = true
		errs = append(errs, ValidateModes(p.Modes, at.Child("modes"))...)
	}
	return errs
}

// ValidateModes checks one list of modes: Deny alone, or Warn and/or Audit. A plugin's and a
// webhook's modes alike.
func ValidateModes(modes []admission.EnforcementMode, fldPath *field.Path) field.ErrorList {
	if len(modes) == 0 {
		return field.ErrorList{field.Required(fldPath, "Deny, or Warn and/or Audit")}
	}
	supported := []admission.EnforcementMode{admission.EnforcementModeDeny, admission.EnforcementModeWarn, admission.EnforcementModeAudit}
	var errs field.ErrorList
	for j, m := range modes {
		if !slices.Contains(supported, m) {
			errs = append(errs, field.NotSupported(fldPath.Index(j), m, supported))
			continue
		}
		if slices.Index(modes, m) != j {
			errs = append(errs, field.Duplicate(fldPath.Index(j), m))
		}
	}
	if slices.Contains(modes, admission.EnforcementModeDeny) && len(modes) > 1 {
		errs = append(errs, field.Invalid(fldPath, modes, "Deny cannot be combined with Warn or Audit"))
	}
	return errs
}

// ValidateWebhookDispatchSettings checks one webhook plugin's defaulted dispatch settings;
// validating says which plugin (earlyExit is the validating one's, the probe the mutating
// one's).
func ValidateWebhookDispatchSettings(s *admission.WebhookDispatchSettings, validating bool, fldPath *field.Path) field.ErrorList {
	errs := validateBreaker(s.CircuitBreaker, fldPath)
	errs = append(errs, validateWebhookEnforcement(s.EnforcementModes, fldPath.Child("enforcementModes"))...)
	if p := s.IdempotencyProbe; p != nil {
		path := fldPath.Child("idempotencyProbe")
		if p.OneIn < 1 || p.OneIn > maxProbeOneIn {
			errs = append(errs, field.Invalid(path.Child("oneIn"), p.OneIn, fmt.Sprintf("must be from 1 to %d", maxProbeOneIn)))
		}
		if p.MaxInFlight == nil {
			errs = append(errs, field.Required(path.Child("maxInFlight"), "defaulted to 2"))
		} else if v := *p.MaxInFlight; v < 1 || v > maxProbeMaxInFlight {
			errs = append(errs, field.Invalid(path.Child("maxInFlight"), v, fmt.Sprintf("must be from 1 to %d", maxProbeMaxInFlight)))
		}
	}
	errs = append(errs, validateBudget(s.TimeBudget, fldPath)...)
	if s.EarlyExit && !validating {
		errs = append(errs, field.Invalid(fldPath.Child("earlyExit"), true, "only ValidatingAdmissionWebhook calls webhooks in parallel; mutating webhooks are called one after another"))
	}
	if s.IdempotencyProbe != nil && validating {
		errs = append(errs, field.Invalid(fldPath.Child("idempotencyProbe"), "set", "only mutating webhooks are probed: a validating webhook's answer changes nothing"))
	}
	return errs
}

func validateBreaker(b *admission.WebhookCircuitBreaker, fldPath *field.Path) field.ErrorList {
	if b == nil {
		return nil
	}
	path := fldPath.Child("circuitBreaker")
	if b.FailureThreshold == nil || b.InitialBackoff == nil || b.MaxBackoff == nil {
		return field.ErrorList{field.Required(path, "failureThreshold, initialBackoff and maxBackoff are defaulted")}
	}
	var errs field.ErrorList
	if v := *b.FailureThreshold; v < 1 || v > maxFailureThreshold {
		errs = append(errs, field.Invalid(path.Child("failureThreshold"), v, fmt.Sprintf("must be from 1 to %d", maxFailureThreshold)))
	}
	errs = append(errs, durationWithin(path.Child("initialBackoff"), b.InitialBackoff.Duration, minInitialBackoff, maxInitialBackoff)...)
	return append(errs, durationWithin(path.Child("maxBackoff"), b.MaxBackoff.Duration, b.InitialBackoff.Duration, maxMaxBackoff)...)
}

func validateBudget(b *admission.WebhookTimeBudget, fldPath *field.Path) field.ErrorList {
	if b == nil {
		return nil
	}
	var errs field.ErrorList
	path := fldPath.Child("timeBudget")
	if b.DeadlineMargin == nil {
		errs = append(errs, field.Required(path.Child("deadlineMargin"), "defaulted to 2s"))
	} else {
		errs = append(errs, durationWithin(path.Child("deadlineMargin"), b.DeadlineMargin.Duration, minDeadlineMargin, maxDeadlineMargin)...)
	}
	if b.MaxDuration != nil {
		errs = append(errs, durationWithin(path.Child("maxDuration"), b.MaxDuration.Duration, minMaxDuration, maxMaxDuration)...)
	}
	return errs
}

// validateWebhookEnforcement checks the webhooks' enforcement modes: each names a
// configuration and a webhook (as the API requires them: DNS subdomains), once, with valid
// modes, and a maxWait only where the webhook is softened.
func validateWebhookEnforcement(modes []admission.WebhookEnforcement, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	type key struct{ configuration, webhook string }
	seen := map[key]bool{}
	for i, m := range modes {
		at := fldPath.Index(i)
		for _, f := range []struct{ name, value string }{{"configuration", m.Configuration}, {"webhook", m.Webhook}} {
			if f.value == "" {
				errs = append(errs, field.Required(at.Child(f.name), ""))
				continue
			}
			for _, msg := range validation.IsDNS1123Subdomain(f.value) {
				errs = append(errs, field.Invalid(at.Child(f.name), f.value, msg))
			}
		}
		k := key{m.Configuration, m.Webhook}
		if seen[k] {
			errs = append(errs, field.Duplicate(at, m.Configuration+"/"+m.Webhook))
		}
		seen[k] = true
		errs = append(errs, ValidateModes(m.Modes, at.Child("modes"))...)
		if m.MaxWait != nil {
			if !admission.Softens(m.Modes) {
				errs = append(errs, field.Invalid(at.Child("maxWait"), m.MaxWait.Duration.String(), "only a webhook in Warn or Audit is waited for: an enforced webhook holds the request until it answers"))
			} else {
				errs = append(errs, durationWithin(at.Child("maxWait"), m.MaxWait.Duration, 0, maxMaxWait)...)
			}
		}
	}
	return errs
}

// ValidateEnforcementConfiguration checks the legacy EnforcementModes entry's configuration.
func ValidateEnforcementConfiguration(c *admission.EnforcementConfiguration, fldPath *field.Path) field.ErrorList {
	return ValidatePluginEnforcement(c.Plugins, fldPath.Child("plugins"))
}

// ValidateWebhookDispatchConfiguration checks the legacy WebhookDispatchConfiguration, in a
// webhook plugin's own entry: upstream's fields it carries, and the dispatch settings.
func ValidateWebhookDispatchConfiguration(c *admission.WebhookDispatchConfiguration, validating bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, p := range []struct{ name, value string }{{"kubeConfigFile", c.KubeConfigFile}, {"staticManifestsDir", c.StaticManifestsDir}} {
		if p.value != "" && !filepath.IsAbs(p.value) {
			errs = append(errs, field.Invalid(fldPath.Child(p.name), p.value, "must be an absolute path"))
		}
	}
	if c.StaticManifestsDir != "" && staticManifestsSince != "" {
		errs = append(errs, field.Invalid(fldPath.Child("staticManifestsDir"), c.StaticManifestsDir,
			"static webhook manifests came with Kubernetes "+staticManifestsSince+"; this release is built on "+version.Get().GitVersion))
	}
	errs = append(errs, validateBreaker(c.CircuitBreaker, fldPath)...)
	errs = append(errs, validateBudget(c.TimeBudget, fldPath)...)
	if c.EarlyExit && !validating {
		errs = append(errs, field.Invalid(fldPath.Child("earlyExit"), true, "only ValidatingAdmissionWebhook calls webhooks in parallel; mutating webhooks are called one after another"))
	}
	return errs
}

func durationWithin(path *field.Path, d, low, high time.Duration) field.ErrorList {
	if d < low || d > high {
		return field.ErrorList{field.Invalid(path, d.String(), fmt.Sprintf("must be from %s to %s", low, high))}
	}
	return nil
}

// RefusedReason reports why plugin's enforcement mode cannot be changed, or "" if it can.
func RefusedReason(plugin string) string { return refused[plugin] }

// RefusedPlugins names, sorted, the plugins whose enforcement mode cannot be changed.
func RefusedPlugins() []string {
	names := make([]string, 0, len(refused))
	for name := range refused {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
