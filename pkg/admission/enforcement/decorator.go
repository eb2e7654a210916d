package enforcement

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// wouldDeny counts the denials admitted because of a plugin's mode (Warn, Audit, or both:
// the mode label), so an operator can see what turning Deny on would refuse.
var wouldDeny = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace:      "portcullis",
	Subsystem:      "admission_enforcement",
	Name:           "would_deny_total",
	Help:           "Requests a validating admission plugin denied but admitted because the plugin's enforcement mode is Warn, Audit or both, by plugin and mode.",
	StabilityLevel: metrics.ALPHA,
}, []string{"plugin", "mode"})

var registerOnce sync.Once

// registerMetrics registers the metric once per process: the command may be started several
// times in one test process, and legacyregistry refuses a second registration.
func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(wouldDeny) })
}

// Decorator is an admission decorator that wraps each plugin configured Warn and/or Audit.
// Put it before every decorator that wraps plugins (upstream's controller metrics), so it
// wraps the plugin itself; a decorator that looks for optional interfaces of the plugin
// (ReadinessChecks) must come before it. Its zero value (and nil) changes nothing.
type Decorator struct {
	// source names where the modes were read (file and entry), for errors.
	source string
	// configured is every plugin the file names, Deny included.
	configured []string
	// soften is the plugins configured Warn and/or Audit.
	soften map[string]Soften

	mu  sync.Mutex
	err []error
}

var _ admission.Decorator = &Decorator{}

func newDecorator(source string, plugins []portcullisapi.PluginEnforcement) *Decorator {
	d := &Decorator{source: source, soften: map[string]Soften{}}
	for _, p := range plugins {
		d.configured = append(d.configured, p.Name)
		// Deny: exactly the plugin's behaviour, so not wrapped at all.
		if m := SoftenFor(p.Modes); m.Softens() {
			d.soften[p.Name] = m
		}
	}
	return d
}

// NotEnabled returns a warning for each configured plugin that is not among the enabled
// ones: its mode is ignored, as upstream ignores the configuration entry of a plugin that
// is not enabled, so that taking a plugin's name out of --enable-admission-plugins is always
// a safe off switch. Worth a warning all the same: a typo, or a plugin the operator believes
// is in Warn mode while it does not run at all.
func (d *Decorator) NotEnabled(enabled []string) []string {
	if d == nil {
		return nil
	}
	var warnings []string
	for _, name := range d.configured {
		if !slices.Contains(enabled, name) {
			warnings = append(warnings, fmt.Sprintf("%s: the enforcement mode of plugin %q is ignored: the plugin is not enabled (--enable-admission-plugins)", d.source, name))
		}
	}
	return warnings
}

// Err reports the configured plugins that Decorate found without a validating phase. Call
// it once the admission chain is built (the server's config is built).
func (d *Decorator) Err() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.err) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", d.source, errors.Join(d.err...))
}

// Decorate wraps handler if its plugin is configured Warn and/or Audit, and returns it
// unchanged otherwise.
func (d *Decorator) Decorate(handler admission.Interface, name string) admission.Interface {
	if d == nil {
		return handler
	}
	m, ok := d.soften[name]
	if !ok {
		return handler
	}
	validator, ok := handler.(admission.ValidationInterface)
	if !ok {
		d.mu.Lock()
		d.err = append(d.err, fmt.Errorf("plugin %q: %w", name, errNotValidating))
		d.mu.Unlock()
		return handler
	}
	if deferring, ok := handler.(RefusalDeferrer); ok {
		deferring.DeferRefusalsToValidation()
	}
	v := &validating{Interface: handler, validator: validator, name: name, modes: m, annotation: portcullisapi.WouldDenyAnnotationKey(name)}
	if mutator, ok := handler.(admission.MutationInterface); ok {
		return &mutatingAndValidating{validating: v, mutator: mutator}
	}
	return v
}

// RefusalDeferrer is implemented by a plugin whose mutating phase refuses exactly what its
// validating phase would then refuse too (PodSecurityPolicy: no policy admits the pod). Told
// that its refusals are softened, its mutating phase admits the object unchanged instead of
// refusing, and the validating phase's refusal, which the decorator softens, is recorded
// once. Without it a plugin's mutating phase refuses in every mode.
type RefusalDeferrer interface {
	DeferRefusalsToValidation()
}

// validating wraps a plugin's validating phase. It deliberately has no Admit: a
// validating-only plugin must not become a mutating one in the chain's eyes.
type validating struct {
	// Interface supplies the plugin's own Handles.
	admission.Interface
	validator  admission.ValidationInterface
	name       string
	modes      Soften
	annotation string
}

var _ admission.ValidationInterface = &validating{}

// mutatingAndValidating wraps a plugin of both phases: Admit is the plugin's own.
type mutatingAndValidating struct {
	*validating
	mutator admission.MutationInterface
}

var (
	_ admission.MutationInterface   = &mutatingAndValidating{}
	_ admission.ValidationInterface = &mutatingAndValidating{}
)

// Admit is the plugin's, untouched: mutation is never suppressed.
func (w *mutatingAndValidating) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return w.mutator.Admit(ctx, a, o)
}

// Unwrap returns the plugin.
func (w *validating) Unwrap() admission.Interface { return w.Interface }

// Validate runs the plugin and admits what it denies, as a warning and/or an audit record.
// The admitted path is one call and one comparison: no allocation.
func (w *validating) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	err := w.validator.Validate(ctx, a, o)
	if err == nil {
		return nil
	}
	return w.admitDenial(ctx, a, err)
}

// admitDenial returns nil for a denial (a 4xx status), after recording it; any other error
// is returned unchanged, so a plugin that cannot judge still fails closed.
func (w *validating) admitDenial(ctx context.Context, a admission.Attributes, err error) error {
	msg, ok := DenialMessage(err)
	if !ok {
		return err
	}
	if w.modes.Warn {
		warning.AddWarning(ctx, "", fmt.Sprintf("%s would deny this request (enforcement mode %s): %s", w.name, w.modes.Label, OneLine(msg)))
	}
	if w.modes.Audit {
		if aerr := a.AddAnnotation(w.annotation, msg); aerr != nil {
			klog.FromContext(ctx).Error(aerr, "Recording an admitted denial in the audit event failed", "plugin", w.name)
		}
	}
	wouldDeny.WithLabelValues(w.name, w.modes.Label).Inc()
	return nil
}

// DenialMessage returns the message of an error a mode may soften — one carrying an API
// status with a 4xx code: the plugin or webhook judged the request — and false for any other
// (a 5xx, a plain error: it could not judge, and fails closed).
func DenialMessage(err error) (string, bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return "", false
	}
	if code := status.Status().Code; code < 400 || code >= 500 {
		return "", false
	}
	if msg := status.Status().Message; msg != "" {
		return msg, true
	}
	return err.Error(), true
}

// OneLine makes text fit a Warning header, which refuses control characters (it would drop
// the warning): a multi-line message still reaches the client, on one line.
func OneLine(text string) string { return strings.Map(noControl, text) }

func noControl(r rune) rune {
	if unicode.IsControl(r) {
		return ' '
	}
	return r
}
