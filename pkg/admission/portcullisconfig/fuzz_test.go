package portcullisconfig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
)

// entryFile is the one file an entry's path may name while fuzzing.
const entryFile = "entry.yaml"

// FuzzLoad loads an admission config file (and the one file an entry's path may name) as the
// command does. Whatever it accepts must be usable: enforcement modes that decorate a denying
// plugin as configured (Deny left alone; Warn and Audit admit with a warning and an audit
// annotation the server accepts), dispatch settings within their documented ranges, servable
// APIs. Whatever it refuses, it refuses naming the file. Seeds are the tests' files; crashers
// are kept under testdata/fuzz.
func FuzzLoad(f *testing.F) {
	const ownFile = "apiVersion: admission.portcullis.io/v1alpha1\nkind: PortcullisConfiguration\nenforcementModes:\n- name: Fake\n  modes: [Audit]\n"
	for _, seed := range []struct{ file, entry string }{
		{withEntry("enforcementModes:\n- name: Fake\n  modes: [Warn, Audit]"), ""},
		{withEntry("enforcementModes:\n- name: Fake\n  modes: [Deny]\n- name: Other\n  modes: [Audit, Warn]"), ""},
		{withEntry("enforcementModes:\n- name: PodSecurity\n  modes: [Warn]"), ""},
		{withEntry("enforcementModes:\n- name: Fake.Dotted_Name\n  modes: [Audit]"), ""},
		{withEntry(strings.SplitN(Example(), "\n", 3)[2] + "servedAPIs: [policy/v1beta1]\n"), ""},
		{withEntry("webhookDispatch:\n  mutating:\n    earlyExit: true"), ""},
		{withEntry("servedAPIs: [policy/v1beta2]"), ""},
		{header + "- name: EnforcementModes\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: EnforcementConfiguration\n    plugins:\n    - name: Fake\n      modes: [Warn]\n", ""},
		{header + "- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: WebhookDispatchConfiguration\n    circuitBreaker: {}\n", ""},
		{header + "- name: Portcullis\n  path: " + entryFile + "\n", ownFile},
		{"imagePolicy:\n  kubeConfigFile: /x\n", ""},
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
					if p.Configuration == nil && p.Path != "" && p.Path != entryFile && p.Path != entryPath {
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
		c, err := Load(file)
		if err != nil {
			if !strings.Contains(err.Error(), file) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		for _, name := range c.ServedAPIs {
			gv, err := schema.ParseGroupVersion(name)
			if err != nil || !slices.Contains([]schema.GroupVersion{{Group: "policy", Version: "v1beta1"}, {Group: "admissionregistration.k8s.io", Version: "v1alpha1"}}, gv) {
				t.Fatalf("served API %q is not ours", name)
			}
		}
		// The documented ranges (the API types' comments), restated rather than taken from
		// the validation under test.
		for _, validating := range []bool{false, true} {
			dispatch := c.Dispatch(validating)
			if dispatch == nil {
				continue
			}
			if b := dispatch.CircuitBreaker; b != nil && (b.FailureThreshold == nil || *b.FailureThreshold < 1 || *b.FailureThreshold > 1000 ||
				b.InitialBackoff == nil || b.InitialBackoff.Duration < 100*time.Millisecond || b.InitialBackoff.Duration > 10*time.Minute ||
				b.MaxBackoff == nil || b.MaxBackoff.Duration < b.InitialBackoff.Duration || b.MaxBackoff.Duration > time.Hour) {
				t.Fatalf("breaker settings out of range: %+v", b)
			}
			if b := dispatch.TimeBudget; b != nil && (b.DeadlineMargin == nil || b.DeadlineMargin.Duration < 100*time.Millisecond || b.DeadlineMargin.Duration > 30*time.Second) {
				t.Fatalf("budget settings out of range: %+v", b)
			}
			if p := dispatch.IdempotencyProbe; p != nil && (validating || p.OneIn < 1 || p.MaxInFlight == nil || *p.MaxInFlight < 1 || *p.MaxInFlight > 64) {
				t.Fatalf("probe settings out of range, or on the validating plugin: %+v", p)
			}
			if dispatch.EarlyExit && !validating {
				t.Fatal("the mutating plugin was given an early exit")
			}
		}
		d := enforcement.New(c.EnforcementSource, c.EnforcementModes)
		var names []string
		for _, p := range c.EnforcementModes {
			names = append(names, p.Name)
		}
		if warnings := d.NotEnabled(names); len(warnings) != 0 {
			t.Fatalf("the configured plugins are not enabled by their own list: %q", warnings)
		}
		for _, p := range c.EnforcementModes {
			plugin := &denier{Handler: admission.NewHandler(admission.Create)}
			handler := d.Decorate(plugin, p.Name)
			var got recorder
			a := attributes()
			err := handler.(admission.ValidationInterface).Validate(warning.WithWarningRecorder(context.Background(), &got), a, nil)
			warn, audit := slices.Contains(p.Modes, "Warn"), slices.Contains(p.Modes, "Audit")
			switch {
			case !warn && !audit:
				if err == nil {
					t.Fatalf("%q in Deny mode admitted a denial", p.Name)
				}
			case err != nil:
				t.Fatalf("%q in modes %v: the denial was not admitted: %v", p.Name, p.Modes, err)
			case warn != (len(got) == 1):
				t.Fatalf("%q in modes %v: warnings %q", p.Name, p.Modes, got)
			case audit != (len(a.annotations) == 1):
				t.Fatalf("%q in modes %v: the audit annotation was not recorded (%v)", p.Name, p.Modes, a.annotations)
			}
		}
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
	})
}

// denier is a validating plugin that denies everything.
type denier struct{ *admission.Handler }

func (denier) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	return admission.NewForbidden(a, errors.New("no"))
}

type recorder []string

func (r *recorder) AddWarning(_, text string) { *r = append(*r, text) }

// recordingAttributes keeps the audit annotations added, which the server's own
// attributes record only into an audit event.
type recordingAttributes struct {
	admission.Attributes
	annotations map[string]string
}

func (r *recordingAttributes) AddAnnotation(key, value string) error {
	if err := r.Attributes.AddAnnotation(key, value); err != nil {
		return err
	}
	if r.annotations == nil {
		r.annotations = map[string]string{}
	}
	r.annotations[key] = value
	return nil
}

func attributes() *recordingAttributes {
	pod := &api.Pod{}
	pod.Name, pod.Namespace = "p", "ns"
	return &recordingAttributes{Attributes: admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), "ns", "p",
		api.Resource("pods").WithVersion("v1"), "", admission.Create, nil, false, &user.DefaultInfo{Name: "alice"})}
}
