package portcullisconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

const header = "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"

// withEntry is an admission config file with an upstream entry and the Portcullis entry
// holding config (the PortcullisConfiguration's fields).
func withEntry(config string) string {
	return header + "- name: EventRateLimit\n  path: eventratelimit.yaml\n- name: Portcullis\n  configuration:\n" +
		"    apiVersion: admission.portcullis.io/v1alpha1\n    kind: PortcullisConfiguration\n" + indent(config, "    ")
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func indent(s, by string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = by + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name string
		file string
		want Configuration
		// deprecations are substrings, one per expected deprecation; blocking says which block
		// rollback.
		deprecations []string
		blocking     []bool
	}{
		{name: "no file"},
		{name: "stock file", file: header + "- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n    defaults: {enforce: baseline}\n"},
		{name: "legacy unversioned file", file: "imagePolicy:\n  kubeConfigFile: /x\n"},
		{name: "empty entry", file: withEntry("")},
		{name: "every setting", file: withEntry(`webhookDispatch:
  mutating:
    circuitBreaker: {failureThreshold: 3}
  validating:
    timeBudget: {maxDuration: 10s}
    earlyExit: true
enforcementModes:
- name: SecurityContextDeny
  modes: [Warn, Audit]
servedAPIs: [policy/v1beta1]
`), want: entry(admission.PortcullisConfiguration{
			EnforcementModes: []admission.PluginEnforcement{{Name: "SecurityContextDeny", Modes: []admission.EnforcementMode{"Warn", "Audit"}}},
			WebhookDispatch: &admission.WebhookDispatch{
				Mutating: &admission.WebhookDispatchSettings{CircuitBreaker: &admission.WebhookCircuitBreaker{FailureThreshold: ptr.To[int32](3), InitialBackoff: duration(time.Second), MaxBackoff: duration(30 * time.Second)}},
				Validating: &admission.WebhookDispatchSettings{EarlyExit: true,
					TimeBudget: &admission.WebhookTimeBudget{DeadlineMargin: duration(2 * time.Second), MaxDuration: duration(10 * time.Second)}},
			},
			ServedAPIs: []string{"policy/v1beta1"},
		})},
		{name: "webhook modes, probe and trace", file: withEntry(`webhookDispatch:
  mutating:
    enforcementModes:
    - {configuration: inject, webhook: inject.example.com, modes: [Audit]}
    - {configuration: inject, webhook: enforced.example.com, modes: [Deny]}
    idempotencyProbe: {oneIn: 100}
  validating:
    enforcementModes:
    - {configuration: policy, webhook: deny.example.com, modes: [Warn, Audit]}
admissionTrace: {onRequest: true}
`), want: entry(admission.PortcullisConfiguration{
			WebhookDispatch: &admission.WebhookDispatch{
				Mutating: &admission.WebhookDispatchSettings{
					EnforcementModes: []admission.WebhookEnforcement{
						{Configuration: "inject", Webhook: "inject.example.com", Modes: []admission.EnforcementMode{"Audit"}},
						{Configuration: "inject", Webhook: "enforced.example.com", Modes: []admission.EnforcementMode{"Deny"}},
					},
					IdempotencyProbe: &admission.WebhookIdempotencyProbe{OneIn: 100, MaxInFlight: ptr.To[int32](2)}},
				Validating: &admission.WebhookDispatchSettings{
					EnforcementModes: []admission.WebhookEnforcement{{Configuration: "policy", Webhook: "deny.example.com", Modes: []admission.EnforcementMode{"Warn", "Audit"}}}},
			},
			AdmissionTrace: &admission.AdmissionTrace{OnRequest: true},
		})},
		{name: "trace alone", file: withEntry("admissionTrace: {audit: true}\n"), want: entry(admission.PortcullisConfiguration{AdmissionTrace: &admission.AdmissionTrace{Audit: true}})},
		{name: "the example", file: withEntry(strings.SplitN(Example(), "\n", 3)[2]), want: entry(admission.PortcullisConfiguration{
			WebhookDispatch: &admission.WebhookDispatch{Mutating: exampleDispatch(false), Validating: exampleDispatch(true)},
		})},
		{name: "earlier releases' entries", file: header + `- name: EnforcementModes
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: EnforcementConfiguration
    plugins:
    - name: SecurityContextDeny
      modes: [Audit]
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: WebhookDispatchConfiguration
    kubeConfigFile: /etc/kubernetes/webhooks.kubeconfig
    circuitBreaker: {}
    earlyExit: true
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: WebhookDispatchConfiguration
    kubeConfigFile: /etc/kubernetes/webhooks.kubeconfig
`, want: entry(admission.PortcullisConfiguration{
			EnforcementModes: []admission.PluginEnforcement{{Name: "SecurityContextDeny", Modes: []admission.EnforcementMode{"Audit"}}},
			WebhookDispatch:  &admission.WebhookDispatch{Validating: &admission.WebhookDispatchSettings{EarlyExit: true, CircuitBreaker: exampleDispatch(true).CircuitBreaker}},
		}),
			deprecations: []string{
				"plugins[0] (EnforcementModes): the EnforcementModes entry is replaced by the Portcullis entry's enforcementModes",
				"plugins[1] (ValidatingAdmissionWebhook): WebhookDispatchConfiguration in ValidatingAdmissionWebhook's entry stops a stock kube-apiserver from starting",
				"plugins[2] (MutatingAdmissionWebhook): WebhookDispatchConfiguration in MutatingAdmissionWebhook's entry stops a stock kube-apiserver from starting",
			},
			blocking: []bool{false, true, true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := ""
			if tc.file != "" {
				file = writeFile(t, t.TempDir(), "admission.yaml", tc.file)
			}
			got, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Deprecations) != len(tc.deprecations) {
				t.Fatalf("deprecations %+v, want %d", got.Deprecations, len(tc.deprecations))
			}
			for i, d := range got.Deprecations {
				if !strings.Contains(d.Message, tc.deprecations[i]) || !strings.Contains(d.Message, file) || d.BlocksRollback != tc.blocking[i] {
					t.Errorf("deprecation %d = %+v, want %q naming %s, blocking rollback %v", i, d, tc.deprecations[i], file, tc.blocking[i])
				}
			}
			tc.want.File = file
			for _, f := range got.NewerFields {
				if !strings.Contains(got.Entry, file) {
					t.Errorf("%s is set, but the entry is named %q, not by its file %s", f.Path, got.Entry, file)
				}
			}
			// Which fields are newer is TestNewerFieldsSet's.
			got.Deprecations, got.EnforcementSource, got.NewerFields, got.Entry = nil, "", nil, ""
			// The converted webhook entries are TestUpstreamWebhookEntry's.
			if diff := cmp.Diff(&tc.want, got, cmpopts.IgnoreUnexported(Configuration{})); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}

// exampleDispatch is Example's dispatch settings for one plugin, defaulted.
func exampleDispatch(validating bool) *admission.WebhookDispatchSettings {
	return &admission.WebhookDispatchSettings{
		CircuitBreaker: &admission.WebhookCircuitBreaker{FailureThreshold: ptr.To[int32](5), InitialBackoff: duration(time.Second), MaxBackoff: duration(30 * time.Second)},
		TimeBudget:     &admission.WebhookTimeBudget{DeadlineMargin: duration(2 * time.Second)},
		EarlyExit:      validating,
	}
}

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// entry is the Configuration Load returns for an entry read as config.
func entry(config admission.PortcullisConfiguration) Configuration {
	return Configuration{PortcullisConfiguration: config}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		{name: "refused plugin", file: withEntry("enforcementModes:\n- name: PodSecurity\n  modes: [Warn]"),
			want: []string{"plugins[1] (Portcullis)", "configuration.enforcementModes[0].name", "PodSecurity's enforcement mode cannot be changed", "modes of its own"}},
		{name: "refused webhook", file: withEntry("enforcementModes:\n- name: ValidatingAdmissionWebhook\n  modes: [Audit]"),
			want: []string{"configuration.enforcementModes[0].name", "failurePolicy"}},
		{name: "modes empty", file: withEntry("enforcementModes:\n- name: Fake\n  modes: []"), want: []string{"configuration.enforcementModes[0].modes: Required value"}},
		{name: "modes missing", file: withEntry("enforcementModes:\n- name: Fake"), want: []string{"configuration.enforcementModes[0].modes: Required value"}},
		{name: "Deny with Warn", file: withEntry("enforcementModes:\n- name: Fake\n  modes: [Deny, Warn]"), want: []string{"configuration.enforcementModes[0].modes", "Deny cannot be combined"}},
		{name: "unknown mode", file: withEntry("enforcementModes:\n- name: Fake\n  modes: [Warn, Log]"), want: []string{"configuration.enforcementModes[0].modes[1]", `Unsupported value: "Log"`}},
		{name: "repeated mode", file: withEntry("enforcementModes:\n- name: Fake\n  modes: [Warn, Warn]"), want: []string{"configuration.enforcementModes[0].modes[1]: Duplicate value"}},
		{name: "duplicate name", file: withEntry("enforcementModes:\n- name: Fake\n  modes: [Warn]\n- name: Fake\n  modes: [Audit]"), want: []string{"configuration.enforcementModes[1].name: Duplicate value"}},
		{name: "no name", file: withEntry("enforcementModes:\n- modes: [Warn]"), want: []string{"configuration.enforcementModes[0].name: Required value"}},
		{name: "unknown field", file: withEntry("enforcementModes:\n- name: Fake\n  mode: [Warn]"), want: []string{`unknown field "enforcementModes[0].mode"`}},
		{name: "misspelt setting", file: withEntry("webhookDispatch:\n  validating:\n    earlyExits: true"), want: []string{`unknown field "webhookDispatch.validating.earlyExits"`}},
		{name: "mutating early exit", file: withEntry("webhookDispatch:\n  mutating:\n    earlyExit: true"),
			want: []string{"configuration.webhookDispatch.mutating.earlyExit", "mutating webhooks are called one after another"}},
		{name: "threshold out of range", file: withEntry("webhookDispatch:\n  validating:\n    circuitBreaker: {failureThreshold: 0}"),
			want: []string{"configuration.webhookDispatch.validating.circuitBreaker.failureThreshold", "must be from 1 to 1000"}},
		{name: "margin out of range", file: withEntry("webhookDispatch:\n  mutating:\n    timeBudget: {deadlineMargin: 1ms}"),
			want: []string{"configuration.webhookDispatch.mutating.timeBudget.deadlineMargin", "must be from 100ms to 30s"}},
		{name: "webhook mode without webhook", file: withEntry("webhookDispatch:\n  validating:\n    enforcementModes:\n    - {configuration: policy, modes: [Warn]}"),
			want: []string{"configuration.webhookDispatch.validating.enforcementModes[0].webhook: Required value"}},
		{name: "webhook mode, bad configuration name", file: withEntry("webhookDispatch:\n  validating:\n    enforcementModes:\n    - {configuration: Policy_1, webhook: a.example.com, modes: [Warn]}"),
			want: []string{"configuration.webhookDispatch.validating.enforcementModes[0].configuration: Invalid value: \"Policy_1\""}},
		{name: "webhook mode twice", file: withEntry("webhookDispatch:\n  mutating:\n    enforcementModes:\n    - {configuration: c, webhook: a.example.com, modes: [Warn]}\n    - {configuration: c, webhook: a.example.com, modes: [Audit]}"),
			want: []string{"configuration.webhookDispatch.mutating.enforcementModes[1]: Duplicate value: \"c/a.example.com\""}},
		{name: "webhook mode Deny with Audit", file: withEntry("webhookDispatch:\n  mutating:\n    enforcementModes:\n    - {configuration: c, webhook: a.example.com, modes: [Deny, Audit]}"),
			want: []string{"configuration.webhookDispatch.mutating.enforcementModes[0].modes", "Deny cannot be combined"}},
		{name: "validating probe", file: withEntry("webhookDispatch:\n  validating:\n    idempotencyProbe: {oneIn: 1}"),
			want: []string{"configuration.webhookDispatch.validating.idempotencyProbe", "only mutating webhooks are probed"}},
		{name: "probe rate out of range", file: withEntry("webhookDispatch:\n  mutating:\n    idempotencyProbe: {oneIn: 0, maxInFlight: 65}"),
			want: []string{"configuration.webhookDispatch.mutating.idempotencyProbe.oneIn", "must be from 1 to 1000000", "idempotencyProbe.maxInFlight", "must be from 1 to 64"}},
		{name: "trace with nothing on", file: withEntry("admissionTrace: {}"), want: []string{"configuration.admissionTrace", "set onRequest and/or audit"}},
		{name: "API not ours", file: withEntry("servedAPIs: [policy/v1]"), want: []string{"configuration.servedAPIs[0]", `Unsupported value: "policy/v1"`, `"policy/v1beta1"`}},
		{name: "API typo", file: withEntry("servedAPIs: [policy/v1beta2]"), want: []string{"configuration.servedAPIs[0]", `Unsupported value: "policy/v1beta2"`}},
		{name: "API without version", file: withEntry("servedAPIs: [policy]"), want: []string{"configuration.servedAPIs[0]", "must be group/version"}},
		{name: "API twice", file: withEntry("servedAPIs: [policy/v1beta1, policy/v1beta1]"), want: []string{"configuration.servedAPIs[1]: Duplicate value"}},
		{name: "another kind", file: header + "- name: Portcullis\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: EnforcementConfiguration\n",
			want: []string{"plugins[0] (Portcullis)", "want admission.portcullis.io/v1alpha1, Kind=PortcullisConfiguration"}},
		{name: "the internal version", file: header + "- name: Portcullis\n  configuration:\n    apiVersion: admission.portcullis.io/__internal\n    kind: PortcullisConfiguration\n    servedAPIs: [policy/v1beta1]\n",
			want: []string{"plugins[0] (Portcullis)", "apiVersion admission.portcullis.io/__internal: want admission.portcullis.io/v1alpha1"}},
		{name: "earlier releases' dispatch kind in a second entry", file: header + "- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n" +
			"- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: WebhookDispatchConfiguration\n    circuitBreaker: {}\n",
			want: []string{"plugins[1] (ValidatingAdmissionWebhook): WebhookDispatchConfiguration in a second entry", "upstream reads plugins[0] only", "webhookDispatch"}},
		{name: "entry twice", file: withEntry("") + "- name: Portcullis\n  configuration: {}\n", want: []string{"plugins[2]: the entry Portcullis is listed twice (also plugins[1])"}},
		{name: "entry without configuration", file: header + "- name: Portcullis\n", want: []string{"plugins[0] (Portcullis): neither configuration nor path is set"}},
		{name: "entry's file missing", file: header + "- name: Portcullis\n  path: missing.yaml\n", want: []string{"plugins[0] (Portcullis): path ", "missing.yaml: open"}},
		{name: "enforcement modes in both forms", file: withEntry("enforcementModes:\n- name: Fake\n  modes: [Warn]") +
			"- name: EnforcementModes\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: EnforcementConfiguration\n    plugins:\n    - name: Other\n      modes: [Audit]\n",
			want: []string{"plugins[2] (EnforcementModes): enforcement modes are also set by", "plugins[1] (Portcullis): enforcementModes; keep them there only"}},
		{name: "dispatch in both forms", file: withEntry("webhookDispatch:\n  validating:\n    earlyExit: true") +
			"- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: WebhookDispatchConfiguration\n    circuitBreaker: {}\n",
			want: []string{"plugins[2] (ValidatingAdmissionWebhook): ValidatingAdmissionWebhook's dispatch is also set by", "webhookDispatch.validating; keep it there only"}},
		{name: "earlier releases' dispatch kind, invalid", file: header + "- name: MutatingAdmissionWebhook\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: WebhookDispatchConfiguration\n    earlyExit: true\n",
			want: []string{"plugins[0] (MutatingAdmissionWebhook)", "earlyExit"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, t.TempDir(), "admission.yaml", tc.file)
			_, err := Load(file)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, want := range append(tc.want, file) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// TestLoadFromPath: an entry's path is relative to the admission config file, as upstream
// resolves it.
func TestLoadFromPath(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "portcullis.yaml", "apiVersion: admission.portcullis.io/v1alpha1\nkind: PortcullisConfiguration\nservedAPIs: [policy/v1beta1]\n")
	file := writeFile(t, dir, "admission.yaml", header+"- name: Portcullis\n  path: portcullis.yaml\n")
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Serves(schema.GroupVersion{Group: "policy", Version: "v1beta1"}) {
		t.Errorf("servedAPIs = %v, want policy/v1beta1", c.ServedAPIs)
	}
	writeFile(t, dir, "portcullis.yaml", "apiVersion: admission.portcullis.io/v1alpha1\nkind: PortcullisConfiguration\nservedAPIs: [nope]\n")
	if _, err := Load(file); err == nil || !strings.Contains(err.Error(), "path "+filepath.Join(dir, "portcullis.yaml")) || !strings.Contains(err.Error(), "servedAPIs[0]") {
		t.Errorf("Load = %v, want the entry's own file and field named", err)
	}
}

func TestLogValues(t *testing.T) {
	none := &Configuration{}
	if got := fmt.Sprint(none.LogValues()); got != "[admissionConfigFile none mutatingWebhookDispatch upstream's validatingWebhookDispatch upstream's enforcementModes [] servedAPIs [] admissionTrace off]" {
		t.Errorf("no settings: %s", got)
	}
	c := &Configuration{File: "/etc/kubernetes/admission.yaml", PortcullisConfiguration: admission.PortcullisConfiguration{
		EnforcementModes: []admission.PluginEnforcement{{Name: "SecurityContextDeny", Modes: []admission.EnforcementMode{"Audit", "Warn"}}},
		WebhookDispatch:  &admission.WebhookDispatch{Validating: exampleDispatch(true)},
		ServedAPIs:       []string{"policy/v1beta1"},
	}}
	got := fmt.Sprint(c.LogValues())
	for _, want := range []string{"admissionConfigFile /etc/kubernetes/admission.yaml", "mutatingWebhookDispatch upstream's", "validatingWebhookDispatch Portcullis's: circuitBreaker{failureThreshold: ", "earlyExit", "enforcementModes [SecurityContextDeny=Audit+Warn]", "servedAPIs [policy/v1beta1]"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s\nlacks %q", got, want)
		}
	}
	// The trace says how it sees each webhook plugin; it never changes which dispatch runs.
	c.AdmissionTrace = &admission.AdmissionTrace{Audit: true}
	got = fmt.Sprint(c.LogValues())
	for _, want := range []string{"mutatingWebhookDispatch upstream's", `admissionTrace onRequest=false audit=true mutatingWebhooks="the plugin as one step" validatingWebhooks="each webhook"`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s\nlacks %q", got, want)
		}
	}
}
