package webhookconfigurationguard

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	guardv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/internal/configfile"
)

const (
	// DefaultTimeoutThresholdSeconds is the largest timeoutSeconds the timeout check accepts
	// by default: the good practices ask for a small timeout, and the API's own default (10 s)
	// is twice this.
	DefaultTimeoutThresholdSeconds int32 = 5
	// DefaultRequestBudgetSeconds is the time a request may spend in webhooks by default:
	// kube-apiserver's 60 s request timeout is cut to 34 s for webhooks by the clients that
	// matter most (kubectl's and controllers' defaults), so a chain above it times out.
	DefaultRequestBudgetSeconds int32 = 34
	// maxWebhookTimeoutSeconds is the API's own limit on timeoutSeconds.
	maxWebhookTimeoutSeconds int32 = 30
)

var (
	scheme = runtime.NewScheme()
	// Strict: a misspelt field in the admission config file is an error naming it, not a
	// silently ignored setting.
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
)

func init() {
	utilruntime.Must(guardv1alpha1.AddToScheme(scheme))
}

// LoadConfiguration reads the plugin's configuration from the admission config file's
// reader, defaulted and validated. A nil reader (no configuration) gives the defaults.
func LoadConfiguration(r io.Reader) (*guardv1alpha1.WebhookConfigurationGuardConfiguration, error) {
	return configfile.Load(PluginName, r, codecs.UniversalDeserializer(), &guardv1alpha1.WebhookConfigurationGuardConfiguration{},
		guardv1alpha1.SchemeGroupVersion.WithKind("WebhookConfigurationGuardConfiguration"), SetDefaults, Validate)
}

// CheckConfiguration reads a configuration as the plugin's factory does: the command runs it
// before the server starts.
func CheckConfiguration(r io.Reader) error {
	_, err := LoadConfiguration(r)
	return err
}

// SetDefaults fills what the configuration leaves out: every check Warn (a guard turned on
// must not break existing deploy tooling), the 5 s timeout threshold and the 34 s budget.
func SetDefaults(cfg *guardv1alpha1.WebhookConfigurationGuardConfiguration) {
	for _, m := range checkModes(&cfg.Checks) {
		if *m.mode == "" {
			*m.mode = guardv1alpha1.GuardCheckModeWarn
		}
	}
	if cfg.TimeoutThresholdSeconds == nil {
		v := DefaultTimeoutThresholdSeconds
		cfg.TimeoutThresholdSeconds = &v
	}
	if cfg.RequestBudgetSeconds == nil {
		v := DefaultRequestBudgetSeconds
		cfg.RequestBudgetSeconds = &v
	}
}

// Validate checks a defaulted configuration.
func Validate(cfg *guardv1alpha1.WebhookConfigurationGuardConfiguration) field.ErrorList {
	var errs field.ErrorList
	checksPath := field.NewPath("checks")
	for _, m := range checkModes(&cfg.Checks) {
		switch *m.mode {
		case guardv1alpha1.GuardCheckModeWarn, guardv1alpha1.GuardCheckModeDeny, guardv1alpha1.GuardCheckModeOff:
		default:
			errs = append(errs, field.NotSupported(checksPath.Child(string(m.check)), *m.mode,
				[]string{string(guardv1alpha1.GuardCheckModeWarn), string(guardv1alpha1.GuardCheckModeDeny), string(guardv1alpha1.GuardCheckModeOff)}))
		}
	}
	if v := cfg.TimeoutThresholdSeconds; v == nil || *v < 1 || *v > maxWebhookTimeoutSeconds {
		errs = append(errs, field.Invalid(field.NewPath("timeoutThresholdSeconds"), deref(v),
			fmt.Sprintf("must be between 1 and %d (the largest timeoutSeconds a webhook may have)", maxWebhookTimeoutSeconds)))
	}
	if v := cfg.RequestBudgetSeconds; v == nil || *v < 1 {
		errs = append(errs, field.Invalid(field.NewPath("requestBudgetSeconds"), deref(v), "must be at least 1"))
	}
	return errs
}

func deref(v *int32) any {
	if v == nil {
		return "<nil>"
	}
	return *v
}

// checkID names a check as its field in the configuration's checks.
type checkID string

const (
	checkSystemNamespaces checkID = "systemNamespaces"
	checkReviewResources  checkID = "reviewResources"
	checkSelfIntercept    checkID = "selfIntercept"
	checkTimeout          checkID = "timeout"
	checkCatchAll         checkID = "catchAll"
	checkChain            checkID = "chain"
)

type checkMode struct {
	check checkID
	mode  *guardv1alpha1.GuardCheckMode
}

// checkModes lists every check with a pointer to its mode, in the order findings are
// reported.
func checkModes(c *guardv1alpha1.GuardChecks) []checkMode {
	return []checkMode{
		{checkSystemNamespaces, &c.SystemNamespaces},
		{checkReviewResources, &c.ReviewResources},
		{checkSelfIntercept, &c.SelfIntercept},
		{checkTimeout, &c.Timeout},
		{checkCatchAll, &c.CatchAll},
		{checkChain, &c.Chain},
	}
}

// ExampleConfig is a sample configuration for --admission-control-config-file: every check
// at its default mode, spelled out.
const ExampleConfig = `apiVersion: admission.portcullis.io/v1alpha1
kind: WebhookConfigurationGuardConfiguration
checks:
  systemNamespaces: Warn
  reviewResources: Warn
  selfIntercept: Warn
  timeout: Warn
  catchAll: Warn
  chain: Warn
timeoutThresholdSeconds: 5
requestBudgetSeconds: 34
`

// RefusesWith says what the guard refuses that stock admits under the configuration read
// from r: webhook configurations that fail a check at Deny ("" when no check is at Deny).
// Preflight lists it.
func RefusesWith(r io.Reader) (string, error) {
	cfg, err := LoadConfiguration(r)
	if err != nil {
		return "", err
	}
	var denied []string
	for _, m := range checkModes(&cfg.Checks) {
		if *m.mode == guardv1alpha1.GuardCheckModeDeny {
			denied = append(denied, string(m.check))
		}
	}
	if len(denied) == 0 {
		return "", nil
	}
	return fmt.Sprintf("webhook configurations that fail its checks at Deny (%s)", strings.Join(denied, ", ")), nil
}
