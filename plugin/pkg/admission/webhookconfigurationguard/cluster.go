package webhookconfigurationguard

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// Finding is one finding of the guard over a cluster's webhook configurations.
type Finding struct {
	// Message names the configuration, the webhook, the field and the check, as the
	// plugin's warnings and refusals do.
	Message string `json:"message"`
	// Deny is true when the configuration puts the finding's check in Deny mode: the
	// plugin would refuse the write.
	Deny bool `json:"deny"`
}

// CheckCluster runs the guard's checks, as configured, over every webhook configuration of a
// cluster as though each had just been written: what `kube-apiserver preflight --webhooks`
// reports before the swap. The chain is checked once over all of them.
func CheckCluster(cfg *portcullisapi.WebhookConfigurationGuardConfiguration, mutating []admissionregistrationv1.MutatingWebhookConfiguration, validating []admissionregistrationv1.ValidatingWebhookConfiguration) []Finding {
	p := New(cfg)
	var all []*hook
	for i := range mutating {
		all = append(all, mutatingHooks(&mutating[i])...)
	}
	for i := range validating {
		all = append(all, validatingHooks(&validating[i])...)
	}
	var out []Finding
	for _, f := range p.check(all, all) {
		out = append(out, Finding{Message: f.String(), Deny: p.modes[f.check] == portcullisapi.GuardCheckModeDeny})
	}
	return out
}
