package portcullisconfig

import (
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"

	"github.com/portcullis-k8s/portcullis/pkg/releases"
)

// NewerField is a field of the Portcullis entry that a release after the first added: a
// release before Since refuses a file that sets it (it decodes the entry strictly), so going
// back to such a release means taking the field out first.
type NewerField struct {
	// Path is the field's path in the entry's configuration.
	Path string
	// Since is the release that added it.
	Since string
	// set says whether a configuration sets the field.
	set func(*admission.PortcullisConfiguration) bool
}

// newerFields are the Portcullis entry's fields added after the first release. A test holds
// it to the API types (every field is the first release's or listed here) and CHANGELOG.md
// to name each in its release's section.
var newerFields = []NewerField{
	{Path: "admissionTrace", Since: releases.V1372Portcullis1, set: func(c *admission.PortcullisConfiguration) bool {
		return c.AdmissionTrace != nil
	}},
	{Path: "webhookDispatch.mutating.enforcementModes", Since: releases.V1372Portcullis1, set: func(c *admission.PortcullisConfiguration) bool {
		return dispatchSettings(c, false) != nil && len(dispatchSettings(c, false).EnforcementModes) > 0
	}},
	{Path: "webhookDispatch.validating.enforcementModes", Since: releases.V1372Portcullis1, set: func(c *admission.PortcullisConfiguration) bool {
		return dispatchSettings(c, true) != nil && len(dispatchSettings(c, true).EnforcementModes) > 0
	}},
	{Path: "webhookDispatch.mutating.idempotencyProbe", Since: releases.V1372Portcullis1, set: func(c *admission.PortcullisConfiguration) bool {
		return dispatchSettings(c, false) != nil && dispatchSettings(c, false).IdempotencyProbe != nil
	}},
	// Refused by validation (the probe is mutating only), but a field of the type.
	{Path: "webhookDispatch.validating.idempotencyProbe", Since: releases.V1372Portcullis1, set: func(c *admission.PortcullisConfiguration) bool {
		return dispatchSettings(c, true) != nil && dispatchSettings(c, true).IdempotencyProbe != nil
	}},
}

func dispatchSettings(c *admission.PortcullisConfiguration, validating bool) *admission.WebhookDispatchSettings {
	return c.WebhookDispatch.Of(validating)
}

// NewerFieldsSet returns the fields added after the first release that config sets.
func NewerFieldsSet(config *admission.PortcullisConfiguration) []NewerField {
	var out []NewerField
	for _, f := range newerFields {
		if f.set(config) {
			out = append(out, f)
		}
	}
	return out
}
