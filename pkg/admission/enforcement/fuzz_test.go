package enforcement

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/warning"
)

// entryFile is the file an EnforcementModes entry's path may name in FuzzLoad.
const entryFile = "enforcement.yaml"

// FuzzLoad loads the EnforcementModes entry of an admission config file (inline, or from the
// file its path names) as the command does, then decorates a plugin configured in each
// loaded mode and has it deny: Deny is left alone, Warn and Audit admit the denial with a
// warning and an audit annotation the server accepts. Seeds are the tests' files;
// crashers are kept under testdata/fuzz.
func FuzzLoad(f *testing.F) {
	wrap := func(plugins string) string {
		return "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  path: eventratelimit.yaml\n" +
			"- name: EnforcementModes\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: EnforcementConfiguration\n    plugins:\n" + indent(plugins, "    ")
	}
	const ownFile = "apiVersion: admission.portcullis.io/v1alpha1\nkind: EnforcementConfiguration\nplugins:\n- name: Fake\n  modes: [Audit]\n"
	for _, seed := range []struct{ file, entry string }{
		{wrap("- name: Fake\n  modes: [Warn, Audit]"), ""},
		{wrap("- name: Fake\n  modes: [Deny]\n- name: Other\n  modes: [Audit, Warn]"), ""},
		{wrap("- name: SecurityContextDeny\n  modes: [Warn]\n- name: AlwaysPullImages\n  modes: [Deny]"), ""},
		{wrap("- name: PodSecurity\n  modes: [Warn]"), ""},
		{wrap("- name: Fake\n  modes: []"), ""},
		{wrap("- name: Fake\n  modes: [Deny, Warn]"), ""},
		{wrap("- name: Fake\n  modes: [Warn, Log]"), ""},
		{wrap("- name: Fake\n  modes: [Warn]\n- name: Fake\n  modes: [Audit]"), ""},
		{wrap("- modes: [Warn]"), ""},
		{wrap("- name: Fake\n  mode: [Warn]"), ""},
		{wrap("- name: Fake.Dotted_Name\n  modes: [Audit]"), ""},
		{"apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n    defaults: {enforce: baseline}\n", ""},
		{"imagePolicy:\n  kubeConfigFile: /x\n", ""},
		{"apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EnforcementModes\n  path: " + entryFile + "\n", ownFile},
		{"apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EnforcementModes\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: WebhookConfigurationGuardConfiguration\n", ""},
	} {
		f.Add([]byte(seed.file), []byte(seed.entry))
	}
	dir := f.TempDir()
	file := filepath.Join(dir, "admission.yaml")
	entryPath := filepath.Join(dir, entryFile)
	decoder := serializer.NewCodecFactory(admissionConfigScheme, serializer.EnableStrict).UniversalDecoder()
	f.Fuzz(func(t *testing.T, data, entry []byte) {
		// An entry's path may name only the fuzzed entry file: others could be anything on
		// this machine (/dev/zero, say).
		if decoded, err := runtime.Decode(decoder, data); err == nil {
			if config, ok := decoded.(*apiserverapi.AdmissionConfiguration); ok {
				for _, p := range config.Plugins {
					if p.Name == EntryName && p.Configuration == nil && p.Path != "" && p.Path != entryFile && p.Path != entryPath {
						return
					}
				}
			}
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(entryPath, entry, 0o600); err != nil {
			t.Fatal(err)
		}
		d, err := Load(file)
		if err != nil {
			if !strings.Contains(err.Error(), file) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if err := d.CheckEnabled(d.configured); err != nil {
			t.Fatalf("the configured plugins are not enabled by their own list: %v", err)
		}
		for _, name := range d.configured {
			plugin := &fakeValidator{Handler: admission.NewHandler(admission.Create), err: forbidden("no")}
			handler := d.Decorate(plugin, name)
			m, soften := d.soften[name]
			if !soften {
				if handler != admission.Interface(plugin) {
					t.Fatalf("%q in Deny mode was wrapped", name)
				}
				continue
			}
			var got warnings
			a := attributes()
			if err := handler.(admission.ValidationInterface).Validate(warning.WithWarningRecorder(context.Background(), &got), a, nil); err != nil {
				t.Fatalf("%q in mode %s: the denial was not admitted: %v", name, m.label, err)
			}
			if m.warn != (len(got) == 1) {
				t.Fatalf("%q in mode %s: warnings %q", name, m.label, got)
			}
			if m.audit != (len(a.annotations) == 1) {
				t.Fatalf("%q in mode %s: the audit annotation was not recorded (%v)", name, m.label, a.annotations)
			}
		}
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
	})
}
