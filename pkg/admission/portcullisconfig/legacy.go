package portcullisconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	upstreammutating "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	upstreamvalidating "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission/validation"
)

// The forms of earlier releases, converted here into the Portcullis entry and nowhere else:
//   - the EnforcementModes entry (EnforcementConfiguration), now the Portcullis entry's
//     enforcementModes;
//   - WebhookDispatchConfiguration in MutatingAdmissionWebhook's or ValidatingAdmissionWebhook's
//     own entry, now the Portcullis entry's webhookDispatch beside upstream's
//     WebhookAdmissionConfiguration (a stock server refuses our kind there: it blocks rollback).
//
// LegacyLastMinor is the last Kubernetes minor whose releases read them: the first release
// built on the next minor refuses them (docs/registry.md says so; a test holds it to this).
const LegacyLastMinor = "1.37"

// legacyEnforcementEntryName is the entry that held the EnforcementConfiguration before the
// Portcullis entry.
const legacyEnforcementEntryName = "EnforcementModes"

// webhookEntries are upstream's webhook plugins, whose entries held our dispatch kind in
// earlier releases; the value says whether the plugin is the validating one.
var webhookEntries = map[string]bool{
	upstreammutating.PluginName:   false,
	upstreamvalidating.PluginName: true,
}

// readUntil ends every deprecation message: when the form stops being read.
var readUntil = fmt.Sprintf("releases built on Kubernetes %s and earlier read it; the first built on a later minor refuses it", LegacyLastMinor)

// legacyRead says whether a build on minor reads the forms of earlier releases: one on a
// later minor than LegacyLastMinor refuses them, naming the replacement.
func legacyRead(minor string) bool {
	v, err := version.ParseGeneric(minor)
	return err == nil && !v.GreaterThan(version.MustParseGeneric(LegacyLastMinor))
}

// notReadAnyMore is the error for a form of earlier releases in a build that reads it no more.
func notReadAnyMore(at entryAt, form, replacement string) error {
	return fmt.Errorf("%s: %s is no longer read (releases built on Kubernetes %s and earlier read it): %s", at, form, LegacyLastMinor, replacement)
}

// convertLegacy reads the forms of earlier releases in admissionConfig (first: the index of
// each name's first entry, the one upstream hands its plugin) into c, refusing a setting the
// Portcullis entry also makes.
func (c *Configuration) convertLegacy(file string, admissionConfig *apiserverapi.AdmissionConfiguration, first map[string]int, minor string) error {
	if i, ok := first[legacyEnforcementEntryName]; ok {
		at := newEntryAt(file, i, admissionConfig.Plugins[i])
		if !legacyRead(minor) {
			return notReadAnyMore(at, "the "+legacyEnforcementEntryName+" entry", "move its plugins to the "+EntryName+" entry's enforcementModes (kind PortcullisConfiguration)")
		}
		data, err := at.read()
		if err != nil {
			return err
		}
		legacy, err := decode[*admission.EnforcementConfiguration](data, "EnforcementConfiguration")
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if errs := validation.ValidateEnforcementConfiguration(legacy, at.path); len(errs) > 0 {
			return fmt.Errorf("%s: %w", at, errs.ToAggregate())
		}
		if len(c.EnforcementModes) > 0 {
			return fmt.Errorf("%s: enforcement modes are also set by %s; keep them there only", at, c.EnforcementSource)
		}
		c.EnforcementModes, c.EnforcementSource = legacy.Plugins, at.String()
		c.Deprecations = append(c.Deprecations, Deprecation{Message: fmt.Sprintf(
			"%s: the %s entry is replaced by the %s entry's enforcementModes (kind PortcullisConfiguration); %s",
			at, legacyEnforcementEntryName, EntryName, readUntil)})
	}
	for i, entry := range admissionConfig.Plugins {
		validating, ok := webhookEntries[entry.Name]
		if !ok {
			continue
		}
		at := newEntryAt(file, i, entry)
		data, err := at.read()
		if err != nil || !isDispatchKind(data) {
			// Upstream's own entry: upstream's plugin reads it and reports its errors.
			continue
		}
		if first[entry.Name] != i {
			// Upstream hands its plugin the first entry of its name and reads no other: the
			// settings here would be dropped without a word.
			return fmt.Errorf("%s: WebhookDispatchConfiguration in a second entry of %s, which nothing reads (upstream reads plugins[%d] only): "+
				"move its settings to the %s entry's webhookDispatch and remove this entry", at, entry.Name, first[entry.Name], EntryName)
		}
		if !legacyRead(minor) {
			return notReadAnyMore(at, "WebhookDispatchConfiguration in "+entry.Name+"'s entry",
				"move circuitBreaker, timeBudget and earlyExit to the "+EntryName+" entry's webhookDispatch, and give this entry upstream's WebhookAdmissionConfiguration")
		}
		upstream, settings, err := legacyDispatch(data, validating)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		field := "mutating"
		if validating {
			field = "validating"
		}
		if c.Dispatch(validating) != nil {
			return fmt.Errorf("%s: %s's dispatch is also set by %s: webhookDispatch.%s; keep it there only, and this entry in upstream's WebhookAdmissionConfiguration", at, entry.Name, c.Entry, field)
		}
		if c.upstreamWebhookEntries == nil {
			c.upstreamWebhookEntries = map[bool][]byte{}
		}
		c.upstreamWebhookEntries[validating] = upstream
		if settings != nil {
			if c.WebhookDispatch == nil {
				c.WebhookDispatch = &admission.WebhookDispatch{}
			}
			if validating {
				c.WebhookDispatch.Validating = settings
			} else {
				c.WebhookDispatch.Mutating = settings
			}
		}
		c.Deprecations = append(c.Deprecations, Deprecation{BlocksRollback: true, Message: fmt.Sprintf(
			"%s: WebhookDispatchConfiguration in %s's entry stops a stock kube-apiserver from starting (it reads this entry itself, in upstream's kind): "+
				"move circuitBreaker, timeBudget and earlyExit to the %s entry's webhookDispatch.%s, and give this entry upstream's WebhookAdmissionConfiguration "+
				"(apiserver.config.k8s.io/v1) with the same kubeConfigFile and staticManifestsDir; %s",
			at, entry.Name, EntryName, field, readUntil)})
	}
	return nil
}

// isDispatchKind says whether a webhook plugin's entry configuration is in a kind of ours
// (admission.portcullis.io) rather than upstream's.
func isDispatchKind(data []byte) bool {
	var typeMeta metav1.TypeMeta
	return yaml.Unmarshal(data, &typeMeta) == nil && typeMeta.GroupVersionKind().Group == admission.GroupName
}

// UpstreamWebhookEntry is the entry upstream's constructor of a webhook plugin reads: the
// plugin's own entry r (as upstream hands it to the plugin's factory; nil for none), or, when
// Load converted that entry from WebhookDispatchConfiguration, the converted one in upstream's
// kind (its kubeConfigFile and staticManifestsDir; its dispatch settings are in
// webhookDispatch).
func (c *Configuration) UpstreamWebhookEntry(validating bool, r io.Reader) io.Reader {
	if c == nil {
		return r
	}
	if converted, ok := c.upstreamWebhookEntries[validating]; ok {
		if converted == nil {
			return nil
		}
		return bytes.NewReader(converted)
	}
	return r
}

// WebhookEntry reads a webhook plugin's own entry (data) on its own, as preflight does: an
// entry in upstream's kind is returned unchanged; one in WebhookDispatchConfiguration, the form
// of earlier releases, is converted, into upstream's entry (nil when it sets neither
// kubeConfigFile nor staticManifestsDir) and its dispatch settings (nil when it sets none).
func WebhookEntry(data []byte, validating bool) (upstream []byte, legacy *admission.WebhookDispatchSettings, err error) {
	if !isDispatchKind(data) {
		// Not ours: upstream's loader reads it, and reports its errors, as stock does.
		return data, nil, nil
	}
	return legacyDispatch(data, validating)
}

// legacyDispatch converts a WebhookDispatchConfiguration: upstream's entry, and the dispatch
// settings it sets (nil for none).
func legacyDispatch(data []byte, validating bool) ([]byte, *admission.WebhookDispatchSettings, error) {
	cfg, err := decode[*admission.WebhookDispatchConfiguration](data, "WebhookDispatchConfiguration")
	if err != nil {
		return nil, nil, fmt.Errorf("decoding configuration: %w", err)
	}
	if errs := validation.ValidateWebhookDispatchConfiguration(cfg, validating, nil); len(errs) > 0 {
		return nil, nil, fmt.Errorf("invalid configuration: %w", errs.ToAggregate())
	}
	// Upstream's entry carries what is set; with neither set there is none, as a stock file
	// without the entry (1.35's loader refuses an entry without an absolute kubeConfigFile).
	var upstream []byte
	if cfg.KubeConfigFile != "" || cfg.StaticManifestsDir != "" {
		entry := map[string]string{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration"}
		for field, value := range map[string]string{"kubeConfigFile": cfg.KubeConfigFile, "staticManifestsDir": cfg.StaticManifestsDir} {
			if value != "" {
				entry[field] = value
			}
		}
		if upstream, err = json.Marshal(entry); err != nil {
			return nil, nil, err
		}
	}
	var settings *admission.WebhookDispatchSettings
	if cfg.CircuitBreaker != nil || cfg.TimeBudget != nil || cfg.EarlyExit {
		settings = &admission.WebhookDispatchSettings{CircuitBreaker: cfg.CircuitBreaker, TimeBudget: cfg.TimeBudget, EarlyExit: cfg.EarlyExit}
	}
	return upstream, settings, nil
}
