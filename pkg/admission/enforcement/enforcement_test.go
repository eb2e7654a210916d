package enforcement

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	admissionmetrics "k8s.io/apiserver/pkg/admission/metrics"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/component-base/metrics/testutil"
	api "k8s.io/kubernetes/pkg/apis/core"
	"sigs.k8s.io/yaml"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission/validation"
)

// fakeValidator is a validating-only plugin that returns err.
type fakeValidator struct {
	*admission.Handler
	err   error
	calls int
}

func (f *fakeValidator) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	f.calls++
	return f.err
}

// fakeBoth mutates (labels the pod) and validates (returns validateErr); admitErr is what its
// mutating phase returns.
type fakeBoth struct {
	fakeValidator
	admitErr error
}

func (f *fakeBoth) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	a.GetObject().(*api.Pod).Labels = map[string]string{"mutated": "yes"}
	return f.admitErr
}

// fakeMutator has no validating phase.
type fakeMutator struct{ *admission.Handler }

func (fakeMutator) Admit(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return nil
}

// recordingAttributes records the annotations added through the real attributes record,
// which checks the key as the server does.
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

type warnings []string

func (w *warnings) AddWarning(agent, text string) { *w = append(*w, text) }

func attributes() *recordingAttributes {
	pod := &api.Pod{}
	pod.Name, pod.Namespace = "p", "ns"
	return &recordingAttributes{Attributes: admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), "ns", "p",
		api.Resource("pods").WithVersion("v1"), "", admission.Create, nil, false, &user.DefaultInfo{Name: "alice"})}
}

func forbidden(msg string) error {
	return admission.NewForbidden(attributes(), errors.New(msg))
}

func decoratorFor(t testing.TB, plugins string) *Decorator {
	t.Helper()
	var list []portcullisapi.PluginEnforcement
	if err := yaml.UnmarshalStrict([]byte(plugins), &list); err != nil {
		t.Fatal(err)
	}
	if errs := validation.ValidatePluginEnforcement(list, field.NewPath("enforcementModes")); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return New("test", list)
}

func counter(t *testing.T, plugin, mode string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(wouldDeny.WithLabelValues(plugin, mode))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValidate(t *testing.T) {
	denial := forbidden("no privileged containers")
	internal := apierrors.NewInternalError(errors.New("lister broke"))
	plain := errors.New("timed out")
	tests := []struct {
		name            string
		modes           string
		plugin          string // configured plugin; the tested one is "Fake"
		err             error
		wantErr         error
		wantWarnings    []string
		wantAnnotations map[string]string
		wantCount       float64
	}{
		{name: "admitted stays admitted", modes: "[Warn, Audit]", plugin: "Fake"},
		{name: "Deny is unchanged", modes: "[Deny]", plugin: "Fake", err: denial, wantErr: denial},
		{name: "not configured is unchanged", modes: "[Warn]", plugin: "Other", err: denial, wantErr: denial},
		{name: "Warn admits with a warning", modes: "[Warn]", plugin: "Fake", err: denial,
			wantWarnings: []string{`Fake would deny this request (enforcement mode Warn): pods "p" is forbidden: no privileged containers`},
			wantCount:    1},
		{name: "Audit admits with an annotation", modes: "[Audit]", plugin: "Fake", err: denial,
			wantAnnotations: map[string]string{"fake.admission.portcullis.io/would-deny": `pods "p" is forbidden: no privileged containers`},
			wantCount:       1},
		{name: "Warn and Audit", modes: "[Audit, Warn]", plugin: "Fake", err: denial,
			wantWarnings:    []string{`Fake would deny this request (enforcement mode Warn+Audit): pods "p" is forbidden: no privileged containers`},
			wantAnnotations: map[string]string{"fake.admission.portcullis.io/would-deny": `pods "p" is forbidden: no privileged containers`},
			wantCount:       1},
		{name: "a 422 is a denial", modes: "[Warn]", plugin: "Fake",
			err:          apierrors.NewInvalid(api.Kind("Pod"), "p", nil),
			wantWarnings: []string{`Fake would deny this request (enforcement mode Warn): Pod "p" is invalid`},
			wantCount:    1},
		{name: "control characters do not reach the header", modes: "[Warn]", plugin: "Fake", err: forbidden("line one\nline two"),
			wantWarnings: []string{`Fake would deny this request (enforcement mode Warn): pods "p" is forbidden: line one line two`},
			wantCount:    1},
		{name: "an internal error fails closed", modes: "[Warn, Audit]", plugin: "Fake", err: internal, wantErr: internal},
		{name: "a plain error fails closed", modes: "[Warn, Audit]", plugin: "Fake", err: plain, wantErr: plain},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := decoratorFor(t, "- name: "+tc.plugin+"\n  modes: "+tc.modes)
			modes := d.soften["Fake"]
			before := counter(t, "Fake", modes.Label)
			plugin := &fakeValidator{Handler: admission.NewHandler(admission.Create), err: tc.err}
			handler := d.Decorate(plugin, "Fake")
			if _, ok := handler.(admission.MutationInterface); ok {
				t.Errorf("a validating-only plugin became mutating")
			}
			if !handler.Handles(admission.Create) || handler.Handles(admission.Delete) {
				t.Errorf("the plugin's Handles is not kept")
			}
			var got warnings
			a := attributes()
			ctx := warning.WithWarningRecorder(context.Background(), &got)
			err := handler.(admission.ValidationInterface).Validate(ctx, a, nil)
			if err != tc.wantErr {
				t.Errorf("Validate returned %v, want %v", err, tc.wantErr)
			}
			if plugin.calls != 1 {
				t.Errorf("the plugin ran %d times", plugin.calls)
			}
			if diff := cmp.Diff(tc.wantWarnings, []string(got)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnnotations, a.annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if modes.Label != "" {
				if got := counter(t, "Fake", modes.Label) - before; got != tc.wantCount {
					t.Errorf("%s counted %v, want %v", modes.Label, got, tc.wantCount)
				}
			}
		})
	}
}

func TestMutationIsUntouched(t *testing.T) {
	d := decoratorFor(t, "- name: Fake\n  modes: [Warn]")
	mutateErr := forbidden("mutating phase refuses")
	tests := []struct {
		name     string
		admitErr error
	}{
		{name: "mutates, then its denial is admitted"},
		{name: "a mutating-phase denial still rejects", admitErr: mutateErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plugin := &fakeBoth{fakeValidator: fakeValidator{Handler: admission.NewHandler(admission.Create), err: forbidden("no")}, admitErr: tc.admitErr}
			handler := d.Decorate(plugin, "Fake")
			mutator, ok := handler.(admission.MutationInterface)
			if !ok {
				t.Fatalf("a mutating and validating plugin lost its mutating phase")
			}
			a := attributes()
			if err := mutator.Admit(context.Background(), a, nil); err != tc.admitErr {
				t.Errorf("Admit returned %v, want %v", err, tc.admitErr)
			}
			if got := a.GetObject().(*api.Pod).Labels["mutated"]; got != "yes" {
				t.Errorf("the plugin did not mutate")
			}
			if err := handler.(admission.ValidationInterface).Validate(context.Background(), a, nil); err != nil {
				t.Errorf("Validate returned %v, want the denial admitted", err)
			}
		})
	}
}

// deferringPlugin is a fakeBoth that implements RefusalDeferrer.
type deferringPlugin struct {
	fakeBoth
	deferred bool
}

func (d *deferringPlugin) DeferRefusalsToValidation() { d.deferred = true }

func TestRefusalsAreDeferredOnlyWhenSoftened(t *testing.T) {
	tests := []struct {
		name, modes  string
		wantDeferred bool
	}{
		{"Warn", "- name: Fake\n  modes: [Warn]", true},
		{"Audit", "- name: Fake\n  modes: [Audit]", true},
		{"Deny", "- name: Fake\n  modes: [Deny]", false},
		{"another plugin softened", "- name: Other\n  modes: [Warn]", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plugin := &deferringPlugin{fakeBoth: fakeBoth{fakeValidator: fakeValidator{Handler: admission.NewHandler(admission.Create)}}}
			decoratorFor(t, tc.modes).Decorate(plugin, "Fake")
			if plugin.deferred != tc.wantDeferred {
				t.Errorf("refusals deferred: %v, want %v", plugin.deferred, tc.wantDeferred)
			}
		})
	}
}

func TestMutatingOnlyPluginIsReported(t *testing.T) {
	d := decoratorFor(t, "- name: Fake\n  modes: [Audit]")
	plugin := fakeMutator{admission.NewHandler(admission.Create)}
	if got := d.Decorate(plugin, "Fake"); got != admission.Interface(plugin) {
		t.Errorf("a mutating-only plugin was wrapped")
	}
	if err := d.Err(); err == nil || !strings.Contains(err.Error(), `"Fake"`) || !strings.Contains(err.Error(), "no validating phase") {
		t.Errorf("Err() = %v, want it to name Fake and say it has no validating phase", err)
	}
}

// TestNotEnabled: a mode of a plugin taken out of the flags is ignored with a warning, so
// that taking the name out is always a safe off switch.
func TestNotEnabled(t *testing.T) {
	d := decoratorFor(t, "- name: SecurityContextDeny\n  modes: [Warn]\n- name: AlwaysPullImages\n  modes: [Deny]")
	if got := d.NotEnabled([]string{"NamespaceLifecycle", "SecurityContextDeny", "AlwaysPullImages"}); len(got) != 0 {
		t.Errorf("NotEnabled with both enabled: %q", got)
	}
	got := d.NotEnabled([]string{"NamespaceLifecycle", "SecurityContextDeny"})
	if len(got) != 1 || !strings.Contains(got[0], `plugin "AlwaysPullImages" is ignored: the plugin is not enabled`) {
		t.Errorf("NotEnabled = %q, want one warning naming AlwaysPullImages", got)
	}
}

// TestInTheChain builds a chain as the server does — ours first among the decorators, then
// upstream's controller metrics — and checks what the chain sees.
func TestInTheChain(t *testing.T) {
	d := decoratorFor(t, "- name: Validator\n  modes: [Warn]\n- name: Both\n  modes: [Audit]")
	validator := &fakeValidator{Handler: admission.NewHandler(admission.Create), err: forbidden("validator says no")}
	both := &fakeBoth{fakeValidator: fakeValidator{Handler: admission.NewHandler(admission.Create), err: forbidden("both says no")}}
	plugins := admission.NewPlugins()
	plugins.Register("Validator", func(io.Reader) (admission.Interface, error) { return validator, nil })
	plugins.Register("Both", func(io.Reader) (admission.Interface, error) { return both, nil })
	config, err := admission.ReadAdmissionConfiguration(nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := plugins.NewFromPlugins([]string{"Validator", "Both"}, config, admission.PluginInitializers{},
		admission.Decorators{d, admission.DecoratorFunc(admissionmetrics.WithControllerMetrics)})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	a := attributes()
	if err := chain.(admission.MutationInterface).Admit(context.Background(), a, nil); err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if a.GetObject().(*api.Pod).Labels["mutated"] != "yes" {
		t.Errorf("the mutating phase did not run")
	}
	var got warnings
	if err := chain.(admission.ValidationInterface).Validate(warning.WithWarningRecorder(context.Background(), &got), a, nil); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if validator.calls != 1 || both.calls != 1 {
		t.Errorf("validating phases ran %d and %d times, want once each", validator.calls, both.calls)
	}
	if len(got) != 1 || !strings.Contains(got[0], "validator says no") {
		t.Errorf("warnings = %q, want Validator's denial", got)
	}
	if !strings.Contains(a.annotations["both.admission.portcullis.io/would-deny"], "both says no") {
		t.Errorf("annotations = %v, want Both's denial", a.annotations)
	}
}

// BenchmarkDecorator measures what the decorator adds to an admitted request: the wrapped
// plugin admits. Goal: ≤ 100 ns and 0 allocations.
func BenchmarkDecorator(b *testing.B) {
	d := decoratorFor(b, "- name: Fake\n  modes: [Warn, Audit]")
	plugin := &fakeValidator{Handler: admission.NewHandler(admission.Create)}
	handler := d.Decorate(plugin, "Fake").(admission.ValidationInterface)
	a := attributes()
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		h    admission.ValidationInterface
	}{{"plugin", plugin}, {"decorated", handler}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.h.Validate(ctx, a, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
