package admission

import "strings"

// WouldDenyAnnotationKey is the audit annotation a plugin's would-be denials are recorded
// under in Audit mode. Upstream's AddAnnotation requires a qualified name with a
// DNS-subdomain prefix, and prefixes nothing itself, so validation holds plugin names to it.
func WouldDenyAnnotationKey(plugin string) string {
	return strings.ToLower(plugin) + ".admission.portcullis.io/would-deny"
}

// Softens says whether modes soften a denial: Warn or Audit rather than Deny.
func Softens(modes []EnforcementMode) bool {
	for _, m := range modes {
		if m == EnforcementModeWarn || m == EnforcementModeAudit {
			return true
		}
	}
	return false
}

// Of returns the validating or the mutating plugin's settings; nil for none.
func (d *WebhookDispatch) Of(validating bool) *WebhookDispatchSettings {
	switch {
	case d == nil:
		return nil
	case validating:
		return d.Validating
	default:
		return d.Mutating
	}
}

// Ours says whether the settings ask for anything of Portcullis's dispatch: a circuit
// breaker, a time budget, the early exit, a webhook in Warn or Audit, or the idempotency
// probe. When they do not, the plugin is upstream's own: with no settings of ours the server
// is stock's. The admission trace is not one of them.
func (s *WebhookDispatchSettings) Ours() bool {
	if s == nil {
		return false
	}
	for _, m := range s.EnforcementModes {
		if Softens(m.Modes) {
			return true
		}
	}
	return s.CircuitBreaker != nil || s.TimeBudget != nil || s.EarlyExit || s.IdempotencyProbe != nil
}

// PersistentVolumeLabelSources are the volume sources a PersistentVolumeLabel rule may name,
// sorted: validation accepts these, and the plugin knows where each keeps its identifier.
func PersistentVolumeLabelSources() []PersistentVolumeLabelSource {
	return []PersistentVolumeLabelSource{
		PersistentVolumeLabelSourceAWSElasticBlockStore,
		PersistentVolumeLabelSourceAzureDisk,
		PersistentVolumeLabelSourceCSI,
		PersistentVolumeLabelSourceCinder,
		PersistentVolumeLabelSourceGCEPersistentDisk,
		PersistentVolumeLabelSourceVsphereVolume,
	}
}

// GuardCheckField is one check of GuardChecks: its field's name and its mode.
//
// +k8s:deepcopy-gen=false
type GuardCheckField struct {
	Name string
	Mode *GuardCheckMode
}

// Fields lists every check, in the order the WebhookConfigurationGuard plugin reports
// findings: validation, the plugin and its messages read this one list.
func (c *GuardChecks) Fields() []GuardCheckField {
	return []GuardCheckField{
		{"systemNamespaces", &c.SystemNamespaces},
		{"reviewResources", &c.ReviewResources},
		{"selfIntercept", &c.SelfIntercept},
		{"timeout", &c.Timeout},
		{"catchAll", &c.CatchAll},
		{"chain", &c.Chain},
	}
}
