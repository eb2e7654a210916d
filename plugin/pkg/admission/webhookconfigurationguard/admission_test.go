package webhookconfigurationguard

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	api "k8s.io/kubernetes/pkg/apis/core"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

type recorder struct{ warnings []string }

func (r *recorder) AddWarning(_, text string) { r.warnings = append(r.warnings, text) }

func newPlugin(t testing.TB, cfg string, stored ...runtime.Object) *Plugin {
	t.Helper()
	var c *portcullisapi.WebhookConfigurationGuardConfiguration
	var err error
	if cfg == "" {
		c, err = LoadConfiguration(nil)
	} else {
		c, err = LoadConfiguration(strings.NewReader(cfg))
	}
	if err != nil {
		t.Fatal(err)
	}
	p := New(c)
	f := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	p.SetExternalKubeInformerFactory(f)
	for _, o := range stored {
		var err error
		switch o.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			err = f.Admissionregistration().V1().MutatingWebhookConfigurations().Informer().GetIndexer().Add(o)
		default:
			err = f.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	p.SetReadyFunc(func() bool { return true })
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p
}

func attrs(obj runtime.Object) admission.Attributes {
	res := admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations")
	kind := admissionregistrationv1.SchemeGroupVersion.WithKind(validatingKind)
	name := ""
	switch c := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		res = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")
		kind = admissionregistrationv1.SchemeGroupVersion.WithKind(mutatingKind)
		name = c.Name
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		name = c.Name
	}
	return admission.NewAttributesRecord(obj, nil, kind, "", name, res, "", admission.Create, &metav1.CreateOptions{}, false, nil)
}

// findingsOf runs every check with defaults (all Warn) and returns "check path" strings.
func findingsOf(t *testing.T, obj runtime.Object, stored ...runtime.Object) []string {
	t.Helper()
	p := newPlugin(t, "", stored...)
	rec := &recorder{}
	if err := p.Validate(warning.WithWarningRecorder(context.Background(), rec), attrs(obj), nil); err != nil {
		t.Fatalf("Warn mode refused: %v", err)
	}
	var out []string
	for _, w := range rec.warnings {
		// "... (path): msg [check]"
		check := w[strings.LastIndex(w, "[")+1 : len(w)-1]
		path := w[strings.Index(w, "(")+1 : strings.Index(w, ")")]
		out = append(out, check+" "+path)
	}
	return out
}

func TestGoodPracticeExamplesHaveNoFinding(t *testing.T) {
	for _, obj := range []runtime.Object{sidecarInjector(), replicasValidator(), envLabel()} {
		if got := findingsOf(t, obj, sidecarInjector(), replicasValidator(), envLabel()); len(got) > 0 {
			t.Errorf("%T: unexpected findings %v", obj, got)
		}
	}
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(m *admissionregistrationv1.MutatingWebhook)
		want   []string
	}{
		{"no namespaceSelector reaches kube-system", func(m *admissionregistrationv1.MutatingWebhook) { m.NamespaceSelector = nil },
			[]string{"systemNamespaces webhooks[0].rules[0]"}},
		{"selector excluding only the webhook's namespace", func(m *admissionregistrationv1.MutatingWebhook) { m.NamespaceSelector = excludeNamespaces("injector") },
			[]string{"systemNamespaces webhooks[0].rules[0]"}},
		{"objectSelector opt-in excludes system objects", func(m *admissionregistrationv1.MutatingWebhook) {
			m.NamespaceSelector = excludeNamespaces("injector")
			m.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "true"}}
		}, nil},
		{"objectSelector NotIn still matches unlabeled system objects", func(m *admissionregistrationv1.MutatingWebhook) {
			m.NamespaceSelector = excludeNamespaces("injector")
			m.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}
		}, []string{"systemNamespaces webhooks[0].rules[0]"}},
		{"matchCondition excluding kube-system", func(m *admissionregistrationv1.MutatingWebhook) {
			m.NamespaceSelector = excludeNamespaces("injector")
			m.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "no-system", Expression: `request.namespace != "kube-system"`}}
		}, nil},
		{"cluster-scoped rule cannot reach kube-system", func(m *admissionregistrationv1.MutatingWebhook) {
			m.NamespaceSelector = nil
			m.Rules = []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"nodes"}, create)}
			m.Rules[0].Scope = ptr(admissionregistrationv1.ClusterScope)
		}, nil},
		{"leases in kube-node-lease", func(m *admissionregistrationv1.MutatingWebhook) {
			m.NamespaceSelector = excludeNamespaces("kube-system", "injector")
			m.Rules = []admissionregistrationv1.RuleWithOperations{rule([]string{"coordination.k8s.io"}, []string{"leases"}, update)}
		}, []string{"systemNamespaces webhooks[0].rules[0]"}},
		{"tokenreviews named", func(m *admissionregistrationv1.MutatingWebhook) {
			m.Rules = append(m.Rules, rule([]string{"authentication.k8s.io"}, []string{"tokenreviews"}, create))
		}, []string{"reviewResources webhooks[0].rules[1]"}},
		{"localsubjectaccessreviews by wildcard", func(m *admissionregistrationv1.MutatingWebhook) {
			m.Rules = append(m.Rules, rule([]string{"authorization.k8s.io"}, []string{"*"}, all))
		}, []string{"reviewResources webhooks[0].rules[1]"}},
		{"reviews but only on UPDATE, which they never see", func(m *admissionregistrationv1.MutatingWebhook) {
			m.Rules = append(m.Rules, rule([]string{"authorization.k8s.io"}, []string{"*"}, update))
		}, nil},
		{"Fail and intercepts its own namespace's pods", func(m *admissionregistrationv1.MutatingWebhook) {
			m.FailurePolicy = ptr(admissionregistrationv1.Fail)
			m.NamespaceSelector = excludeNamespaces("kube-system", "kube-node-lease")
		}, []string{"selfIntercept webhooks[0].clientConfig.service"}},
		{"unset failurePolicy is Fail", func(m *admissionregistrationv1.MutatingWebhook) {
			m.FailurePolicy = nil
			m.NamespaceSelector = excludeNamespaces("kube-system", "kube-node-lease")
		}, []string{"selfIntercept webhooks[0].clientConfig.service"}},
		{"Fail but excluding its own namespace", func(m *admissionregistrationv1.MutatingWebhook) { m.FailurePolicy = ptr(admissionregistrationv1.Fail) }, nil},
		{"Fail with a URL webhook cannot self-intercept", func(m *admissionregistrationv1.MutatingWebhook) {
			m.FailurePolicy = ptr(admissionregistrationv1.Fail)
			m.NamespaceSelector = excludeNamespaces("kube-system", "kube-node-lease")
			m.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr("https://webhook.example.com")}
		}, nil},
		{"timeout above 5 s", func(m *admissionregistrationv1.MutatingWebhook) { m.TimeoutSeconds = ptr(int32(6)) },
			[]string{"timeout webhooks[0].timeoutSeconds"}},
		{"timeout of exactly 5 s", func(m *admissionregistrationv1.MutatingWebhook) { m.TimeoutSeconds = ptr(int32(5)) }, nil},
		{"unset timeout is 10 s", func(m *admissionregistrationv1.MutatingWebhook) { m.TimeoutSeconds = nil },
			[]string{"timeout webhooks[0].timeoutSeconds"}},
		{"catch-all with Fail", func(m *admissionregistrationv1.MutatingWebhook) {
			m.FailurePolicy = ptr(admissionregistrationv1.Fail)
			m.Rules = []admissionregistrationv1.RuleWithOperations{rule([]string{"*"}, []string{"*/*"}, all)}
		}, []string{"reviewResources webhooks[0].rules[0]", "catchAll webhooks[0].rules[0]"}},
		{"catch-all with Ignore", func(m *admissionregistrationv1.MutatingWebhook) {
			m.Rules = []admissionregistrationv1.RuleWithOperations{rule([]string{"*"}, []string{"*"}, create, update, admissionregistrationv1.Delete, admissionregistrationv1.Connect)}
		}, []string{"reviewResources webhooks[0].rules[0]"}},
		{"every resource but not every operation", func(m *admissionregistrationv1.MutatingWebhook) {
			m.FailurePolicy = ptr(admissionregistrationv1.Fail)
			m.Rules = []admissionregistrationv1.RuleWithOperations{rule([]string{"*"}, []string{"*"}, update)}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sidecarInjector()
			tt.mutate(&c.Webhooks[0])
			got := findingsOf(t, c)
			if !slices.Equal(got, tt.want) {
				t.Errorf("findings %v, want %v", got, tt.want)
			}
		})
	}
}

// chainOf builds a mutating configuration of n webhooks on pods, each timing out after
// seconds (reinvoked when reinvoke).
func chainOf(name string, n int, seconds int32, reinvoke bool) *admissionregistrationv1.MutatingWebhookConfiguration {
	c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i := 0; i < n; i++ {
		w := sidecarInjector().Webhooks[0]
		w.Name = fmt.Sprintf("%s-%d.example.com", name, i)
		w.TimeoutSeconds = ptr(seconds)
		if !reinvoke {
			w.ReinvocationPolicy = nil
		}
		c.Webhooks = append(c.Webhooks, w)
	}
	return c
}

func TestChain(t *testing.T) {
	// Timeouts above the threshold are expected here; turn that check off.
	const cfg = "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\nchecks:\n  timeout: \"Off\"\n  chain: Deny\n"
	tests := []struct {
		name    string
		stored  []runtime.Object
		written runtime.Object
		deny    bool
	}{
		{"3×(5 s ×2) + validating 2 s = 32 s fits", []runtime.Object{replicasValidator()}, chainOf("a", 3, 5, true), false},
		{"3×(5 s ×2) + 5 s = 35 s on pods exceeds 34", []runtime.Object{chainOf("b", 1, 5, false)}, chainOf("a", 3, 5, true), true},
		{"the stored version of the written configuration is replaced, not added",
			[]runtime.Object{chainOf("a", 3, 10, false)}, chainOf("a", 3, 5, false), false},
		{"the validating timeout counts once, the longest", []runtime.Object{chainOf("m", 3, 10, false)},
			func() runtime.Object {
				v := replicasValidator()
				v.Webhooks[0].Rules[0].Rule.APIGroups = []string{"*"}
				v.Webhooks[0].Rules[0].Rule.Resources = []string{"*"}
				v.Webhooks[0].TimeoutSeconds = ptr(int32(5))
				return v
			}(), true},
		{"a write not on an over-budget path is not blamed", []runtime.Object{chainOf("m", 4, 10, false)}, replicasValidator(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlugin(t, cfg, tt.stored...)
			err := p.Validate(context.Background(), attrs(tt.written), nil)
			if (err != nil) != tt.deny {
				t.Fatalf("Validate() = %v, deny %v", err, tt.deny)
			}
			if err != nil && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "pods") || !strings.Contains(err.Error(), "[chain]")) {
				t.Errorf("refusal does not name the resource and check: %v", err)
			}
		})
	}
}

func TestDenyListsEveryFinding(t *testing.T) {
	const cfg = "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\nchecks:\n  timeout: Deny\n  selfIntercept: Deny\n  systemNamespaces: \"Off\"\n"
	c := sidecarInjector()
	c.Webhooks[0].NamespaceSelector = nil
	c.Webhooks[0].FailurePolicy = nil
	c.Webhooks[0].TimeoutSeconds = ptr(int32(20))
	p := newPlugin(t, cfg)
	rec := &recorder{}
	err := p.Validate(warning.WithWarningRecorder(context.Background(), rec), attrs(c), nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "2 finding(s)") ||
		!strings.Contains(err.Error(), "webhooks[0].timeoutSeconds") || !strings.Contains(err.Error(), "webhooks[0].clientConfig.service") {
		t.Fatalf("want one 403 listing both findings, got %v", err)
	}
	for _, w := range rec.warnings {
		if strings.Contains(w, "[systemNamespaces]") {
			t.Errorf("an Off check was reported: %s", w)
		}
	}
}

func TestLoadConfiguration(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty is defaults", "", ""},
		{"example", ExampleConfig, ""},
		{"unknown field", "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\ntimeoutThreshold: 3\n", "timeoutThreshold"},
		{"bad mode", "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\nchecks:\n  chain: Block\n", "checks.chain"},
		{"threshold above 30", "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\ntimeoutThresholdSeconds: 31\n", "timeoutThresholdSeconds"},
		{"zero budget", "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\nrequestBudgetSeconds: 0\n", "requestBudgetSeconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfiguration(strings.NewReader(tt.in))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.Checks.Chain != portcullisapi.GuardCheckModeWarn || *cfg.TimeoutThresholdSeconds != 5 || *cfg.RequestBudgetSeconds != 34 {
					t.Errorf("defaults not applied: %+v", cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one naming %q", err, tt.wantErr)
			}
		})
	}
}

func TestIgnoresOtherRequests(t *testing.T) {
	p := newPlugin(t, "")
	a := admission.NewAttributesRecord(&api.Pod{}, nil, api.Kind("Pod").WithVersion("v1"), "ns", "p",
		api.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	if err := p.Validate(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
}

// --- the chain analysis against a brute force over generated configurations ---

var (
	genGroups    = []string{"", "apps", "example.com", "*"}
	genResources = []string{"pods", "deployments", "widgets", "pods/status", "*", "*/*", "*/status", "pods/*"}
	genOps       = []op{create, update, admissionregistrationv1.Delete, admissionregistrationv1.Connect, all}
)

func pick[T any](r *rand.Rand, from []T) []T {
	n := 1 + r.Intn(2)
	out := make([]T, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, from[r.Intn(len(from))])
	}
	return out
}

func genHooks(r *rand.Rand) []*hook {
	var hooks []*hook
	for c := 0; c < 1+r.Intn(6); c++ {
		if r.Intn(2) == 0 {
			m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m%d", c)}}
			for i := 0; i < 1+r.Intn(3); i++ {
				w := admissionregistrationv1.MutatingWebhook{Name: fmt.Sprintf("w%d", i), TimeoutSeconds: ptr(int32(1 + r.Intn(12)))}
				if r.Intn(4) == 0 {
					w.TimeoutSeconds = nil
				}
				if r.Intn(2) == 0 {
					w.ReinvocationPolicy = ptr(admissionregistrationv1.IfNeededReinvocationPolicy)
				}
				w.Rules = []admissionregistrationv1.RuleWithOperations{rule(pick(r, genGroups), pick(r, genResources), pick(r, genOps)...)}
				m.Webhooks = append(m.Webhooks, w)
			}
			hooks = append(hooks, mutatingHooks(m)...)
		} else {
			v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("v%d", c)}}
			for i := 0; i < 1+r.Intn(3); i++ {
				w := admissionregistrationv1.ValidatingWebhook{Name: fmt.Sprintf("w%d", i), TimeoutSeconds: ptr(int32(1 + r.Intn(30)))}
				w.Rules = []admissionregistrationv1.RuleWithOperations{rule(pick(r, genGroups), pick(r, genResources), pick(r, genOps)...)}
				v.Webhooks = append(v.Webhooks, w)
			}
			hooks = append(hooks, validatingHooks(v)...)
		}
	}
	return hooks
}

// bruteWorst computes a resource's worst case with upstream's own rule matcher, one
// request per operation and version, and the plain definition: every matching mutating
// webhook's timeout (twice when reinvoked) plus the longest matching validating timeout.
func bruteWorst(hooks []*hook, k resourceKey) int32 {
	var worst int32
	for _, o := range []admission.Operation{admission.Create, admission.Update, admission.Delete, admission.Connect} {
		a := admission.NewAttributesRecord(nil, nil, schemaGVK(k), "ns", "n", schemaGVR(k), k.sub, o, nil, false, nil)
		var sum, vmax int32
		for _, h := range hooks {
			matched := false
			for _, r := range h.rules {
				if (&rules.Matcher{Rule: r, Attr: a}).Matches() {
					matched = true
				}
			}
			if !matched {
				continue
			}
			if h.mutating {
				sum += h.timeout
				if h.reinvoke {
					sum += h.timeout
				}
			} else if h.timeout > vmax {
				vmax = h.timeout
			}
		}
		worst = max(worst, sum+vmax)
	}
	return worst
}

func TestChainAnalysisProperty(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for iter := 0; iter < 500; iter++ {
		hooks := genHooks(r)
		budget := int32(5 + r.Intn(40))
		universe := resourceUniverse(hooks, representativeResources)
		got := map[resourceKey]bool{}
		for _, res := range analyzeChain(hooks, universe) {
			got[res.key] = res.worst > budget
		}
		for _, k := range universe {
			if want := bruteWorst(hooks, k) > budget; got[k] != want {
				t.Fatalf("iteration %d: %s flagged %v, brute force says %v (worst %d, budget %d)", iter, k, got[k], want, bruteWorst(hooks, k), budget)
			}
		}
	}
}

func schemaGVR(k resourceKey) schemaGroupVersionResource {
	return schemaGroupVersionResource{Group: k.group, Version: "v1", Resource: k.resource}
}

func schemaGVK(k resourceKey) schemaGroupVersionKind {
	return schemaGroupVersionKind{Group: k.group, Version: "v1", Kind: "X"}
}

type (
	schemaGroupVersionResource = schema.GroupVersionResource
	schemaGroupVersionKind     = schema.GroupVersionKind
)
