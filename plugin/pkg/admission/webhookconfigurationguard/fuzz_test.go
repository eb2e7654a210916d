package webhookconfigurationguard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	admissionregistrationconv "k8s.io/kubernetes/pkg/apis/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// Seeds are the tests' inputs; crashers Go finds are kept under testdata/fuzz/<target>.

// apiMaxTimeoutSeconds is the API's own limit on a webhook's timeoutSeconds.
const apiMaxTimeoutSeconds = 30

// FuzzLoadConfiguration loads the plugin's configuration from the admission config file: an
// error names the plugin; a configuration loaded holds (loadedConfigurationHolds), and the
// plugin built from it has its modes and limits.
func FuzzLoadConfiguration(f *testing.F) {
	for _, seed := range []string{
		"",
		ExampleConfig,
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\ntimeoutThreshold: 3\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\nchecks:\n  chain: Block\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\ntimeoutThresholdSeconds: 31\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\nrequestBudgetSeconds: 0\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\nchecks:\n  timeout: \"Off\"\n  chain: Deny\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\nchecks:\n  timeout: Deny\n  selfIntercept: Deny\n  systemNamespaces: \"Off\"\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadConfiguration(bytes.NewReader(data))
		if err != nil {
			if !strings.Contains(err.Error(), PluginName) {
				t.Errorf("the error does not name the plugin: %v", err)
			}
			return
		}
		if err := loadedConfigurationHolds(cfg); err != nil {
			t.Fatalf("loaded, yet %v", err)
		}
		p := New(cfg)
		for _, m := range checkModes(&cfg.Checks) {
			if p.modes[m.check] != *m.mode {
				t.Errorf("check %s: plugin mode %q, configured %q", m.check, p.modes[m.check], *m.mode)
			}
		}
		if p.threshold < 1 || p.threshold > apiMaxTimeoutSeconds || p.budget < 1 {
			t.Errorf("accepted threshold %d, budget %d", p.threshold, p.budget)
		}
	})
}

// loadedConfigurationHolds checks, independently of pkg/apis/admission/validation, what
// every loaded configuration must be for the plugin to work: each check Warn, Deny or Off,
// the timeout threshold within the API's timeoutSeconds, and a budget of at least a second.
func loadedConfigurationHolds(cfg *portcullisapi.WebhookConfigurationGuardConfiguration) error {
	c := cfg.Checks
	for _, mode := range []portcullisapi.GuardCheckMode{c.SystemNamespaces, c.ReviewResources, c.SelfIntercept, c.Timeout, c.CatchAll, c.Chain} {
		if mode != "Warn" && mode != "Deny" && mode != "Off" {
			return fmt.Errorf("a check's mode is %q: %+v", mode, c)
		}
	}
	switch {
	case cfg.TimeoutThresholdSeconds == nil || cfg.RequestBudgetSeconds == nil:
		return fmt.Errorf("a setting is not defaulted: %+v", cfg)
	case *cfg.TimeoutThresholdSeconds < 1 || *cfg.TimeoutThresholdSeconds > apiMaxTimeoutSeconds:
		return fmt.Errorf("timeoutThresholdSeconds %d", *cfg.TimeoutThresholdSeconds)
	case *cfg.RequestBudgetSeconds < 1:
		return fmt.Errorf("requestBudgetSeconds %d", *cfg.RequestBudgetSeconds)
	}
	return nil
}

// fuzzCluster is FuzzValidate's input: the webhook configurations of a cluster, one of which
// is being written.
type fuzzCluster struct {
	Mutating   []admissionregistrationv1.MutatingWebhookConfiguration   `json:"mutating,omitempty"`
	Validating []admissionregistrationv1.ValidatingWebhookConfiguration `json:"validating,omitempty"`
}

const allDeny = "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\n" +
	"checks: {systemNamespaces: Deny, reviewResources: Deny, selfIntercept: Deny, timeout: Deny, catchAll: Deny, chain: Deny}\n"

// FuzzValidate writes one webhook configuration of a cluster (written picks it) into a
// cluster holding the others, as the internal type the server admits or as v1, and checks
// what the guard reports: in Warn mode it refuses nothing, in Deny mode it refuses exactly
// when Warn mode warns, and the internal and v1 forms give the same findings. It then runs
// preflight's check of the whole cluster, and holds the chain analysis to a brute force with
// upstream's own rule matcher.
func FuzzValidate(f *testing.F) {
	addCluster := func(c fuzzCluster, written uint8) {
		data, err := json.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, written)
	}
	addCluster(fuzzCluster{
		Mutating:   []admissionregistrationv1.MutatingWebhookConfiguration{*sidecarInjector(), *envLabel()},
		Validating: []admissionregistrationv1.ValidatingWebhookConfiguration{*replicasValidator()},
	}, 0)
	catchAll := sidecarInjector()
	catchAll.Webhooks[0].FailurePolicy = ptr(admissionregistrationv1.Fail)
	catchAll.Webhooks[0].NamespaceSelector = nil
	catchAll.Webhooks[0].TimeoutSeconds = nil
	catchAll.Webhooks[0].Rules = []admissionregistrationv1.RuleWithOperations{rule([]string{"*"}, []string{"*/*"}, all)}
	addCluster(fuzzCluster{Mutating: []admissionregistrationv1.MutatingWebhookConfiguration{*catchAll}}, 0)
	wide := replicasValidator()
	wide.Webhooks[0].Rules[0].Rule.APIGroups = []string{"*"}
	wide.Webhooks[0].Rules[0].Rule.Resources = []string{"*"}
	wide.Webhooks[0].TimeoutSeconds = ptr(int32(5))
	addCluster(fuzzCluster{
		Mutating:   []admissionregistrationv1.MutatingWebhookConfiguration{*chainOf("m", 3, 10, false), *chainOf("a", 3, 5, true)},
		Validating: []admissionregistrationv1.ValidatingWebhookConfiguration{*wide},
	}, 2)
	leases := sidecarInjector()
	leases.Webhooks[0].NamespaceSelector = excludeNamespaces("kube-system", "injector")
	leases.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	leases.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "no-system", Expression: `request.namespace != "kube-system"`}}
	leases.Webhooks[0].Rules = []admissionregistrationv1.RuleWithOperations{
		rule([]string{"coordination.k8s.io"}, []string{"leases"}, update),
		rule([]string{"authorization.k8s.io"}, []string{"*"}, all),
		rule([]string{"authentication.k8s.io"}, []string{"tokenreviews"}, create),
	}
	leases.Webhooks[0].Rules[0].Scope = ptr(admissionregistrationv1.NamespacedScope)
	addCluster(fuzzCluster{Mutating: []admissionregistrationv1.MutatingWebhookConfiguration{*leases}}, 0)

	warnPlugin := newFuzzPlugin(f, "")
	denyPlugin := newFuzzPlugin(f, allDeny)
	cfg, err := LoadConfiguration(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, written uint8) {
		var c fuzzCluster
		if err := yaml.Unmarshal(data, &c); err != nil {
			return
		}
		n := len(c.Mutating) + len(c.Validating)
		if n == 0 {
			return
		}
		i := int(written) % n
		var stored []runtime.Object
		var v1Obj, internalObj runtime.Object
		for j := range c.Mutating {
			if j == i {
				internal := &admissionregistration.MutatingWebhookConfiguration{}
				if err := admissionregistrationconv.Convert_v1_MutatingWebhookConfiguration_To_admissionregistration_MutatingWebhookConfiguration(&c.Mutating[j], internal, nil); err != nil {
					return
				}
				v1Obj, internalObj = &c.Mutating[j], internal
			} else {
				stored = append(stored, &c.Mutating[j])
			}
		}
		for j := range c.Validating {
			if len(c.Mutating)+j == i {
				internal := &admissionregistration.ValidatingWebhookConfiguration{}
				if err := admissionregistrationconv.Convert_v1_ValidatingWebhookConfiguration_To_admissionregistration_ValidatingWebhookConfiguration(&c.Validating[j], internal, nil); err != nil {
					return
				}
				v1Obj, internalObj = &c.Validating[j], internal
			} else {
				stored = append(stored, &c.Validating[j])
			}
		}
		setStored(t, warnPlugin, stored)
		setStored(t, denyPlugin, stored)

		warned := validateWith(t, warnPlugin, v1Obj)
		if warned.err != nil {
			t.Fatalf("Warn mode refused a write: %v", warned.err)
		}
		if internal := validateWith(t, warnPlugin, internalObj); internal.err != nil || !slices.Equal(internal.warnings, warned.warnings) {
			t.Fatalf("the internal form gives %q (%v), the v1 form %q", internal.warnings, internal.err, warned.warnings)
		}
		denied := validateWith(t, denyPlugin, internalObj)
		if len(denied.warnings) > 0 {
			t.Errorf("Deny mode warned: %q", denied.warnings)
		}
		switch {
		case len(warned.warnings) == 0 && denied.err != nil:
			t.Fatalf("Deny mode refused what Warn mode has no finding for: %v", denied.err)
		case len(warned.warnings) > 0 && denied.err == nil:
			t.Fatalf("Deny mode admitted what Warn mode warns of: %q", warned.warnings)
		case denied.err != nil && !strings.Contains(denied.err.Error(), fmt.Sprintf("%d finding(s)", len(warned.warnings))):
			t.Fatalf("Deny mode's refusal does not count Warn mode's %d findings: %v", len(warned.warnings), denied.err)
		}

		CheckCluster(cfg, c.Mutating, c.Validating)

		checkChainAgainstBruteForce(t, c)
	})
}

type outcome struct {
	warnings []string
	err      error
}

func validateWith(t *testing.T, p *fuzzPlugin, obj runtime.Object) outcome {
	t.Helper()
	var kind, resource, name string
	switch c := obj.(type) {
	case *admissionregistration.MutatingWebhookConfiguration:
		kind, resource, name = mutatingKind, "mutatingwebhookconfigurations", c.Name
	case *admissionregistration.ValidatingWebhookConfiguration:
		kind, resource, name = validatingKind, "validatingwebhookconfigurations", c.Name
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		kind, resource, name = mutatingKind, "mutatingwebhookconfigurations", c.Name
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		kind, resource, name = validatingKind, "validatingwebhookconfigurations", c.Name
	default:
		t.Fatalf("unexpected object %T", obj)
	}
	a := admission.NewAttributesRecord(obj, nil, admissionregistrationv1.SchemeGroupVersion.WithKind(kind), "", name,
		admissionregistrationv1.SchemeGroupVersion.WithResource(resource), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	rec := &recorder{}
	err := p.Validate(warning.WithWarningRecorder(context.Background(), rec), a, nil)
	return outcome{rec.warnings, err}
}

// fuzzPlugin is a plugin whose listers' stores the fuzz target refills for each input.
type fuzzPlugin struct {
	*Plugin
	mutatingIndexer, validatingIndexer cache.Indexer
}

func newFuzzPlugin(t testing.TB, cfg string) *fuzzPlugin {
	t.Helper()
	p := newPlugin(t, cfg)
	f := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	m := f.Admissionregistration().V1().MutatingWebhookConfigurations()
	v := f.Admissionregistration().V1().ValidatingWebhookConfigurations()
	p.mutatingLister, p.validatingLister = m.Lister(), v.Lister()
	return &fuzzPlugin{Plugin: p, mutatingIndexer: m.Informer().GetIndexer(), validatingIndexer: v.Informer().GetIndexer()}
}

// setStored replaces the configurations p's listers hold with stored.
func setStored(t *testing.T, p *fuzzPlugin, stored []runtime.Object) {
	t.Helper()
	var mutating, validating []any
	for _, o := range stored {
		if _, ok := o.(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
			mutating = append(mutating, o)
		} else {
			validating = append(validating, o)
		}
	}
	if err := p.mutatingIndexer.Replace(mutating, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.validatingIndexer.Replace(validating, ""); err != nil {
		t.Fatal(err)
	}
}

// checkChainAgainstBruteForce compares the chain analysis's worst case of every resource with
// bruteWorst's. The analysis leaves apiVersions and scope out by design (the worst case), so
// they are cleared before the comparison; timeouts are kept within the API's 1..30 s, which
// validation enforces before admission sees a write.
func checkChainAgainstBruteForce(t *testing.T, c fuzzCluster) {
	var hooks []*hook
	for i := range c.Mutating {
		hooks = append(hooks, mutatingHooks(&c.Mutating[i])...)
	}
	for i := range c.Validating {
		hooks = append(hooks, validatingHooks(&c.Validating[i])...)
	}
	for _, h := range hooks {
		if h.timeout < 1 || h.timeout > apiMaxTimeoutSeconds {
			return
		}
		rules := make([]admissionregistrationv1.RuleWithOperations, len(h.rules))
		for j, r := range h.rules {
			r.Rule.APIVersions = []string{"*"}
			r.Rule.Scope = nil
			rules[j] = r
		}
		h.rules = rules
	}
	universe := resourceUniverse(hooks, representativeResources)
	for _, res := range analyzeChain(hooks, universe) {
		if want := bruteWorst(hooks, res.key); res.worst != want {
			t.Fatalf("%s: the chain analysis says %d s at worst, the brute force %d s", res.key, res.worst, want)
		}
	}
}
