// Package webhooktest drives Portcullis's webhook plugins through upstream's own test tables
// (k8s.io/apiserver/pkg/admission/plugin/webhook/testing), asserting what upstream's own
// plugin tests assert, in each mode the plugins can be configured in. Only tests import it.
package webhooktest

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	admissionmetrics "k8s.io/apiserver/pkg/admission/metrics"
	webhooktesting "k8s.io/apiserver/pkg/admission/plugin/webhook/testing"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// Mode is one way of configuring a webhook plugin: its entry in the admission config file.
type Mode struct {
	Name string
	// Config is the plugin's entry ("": none).
	Config string
	// Portcullis is the admission config file's Portcullis entry, loaded (nil: none).
	Portcullis *portcullisapi.PortcullisConfiguration
	// Ours says the mode runs our dispatch; otherwise the plugin is upstream's own.
	Ours bool
}

// Reader is the mode's entry as the plugin's constructor takes it.
func (m Mode) Reader() io.Reader {
	if m.Config == "" {
		return nil
	}
	return strings.NewReader(m.Config)
}

// Modes are the configurations every upstream case runs under: none (upstream's plugin), and
// every setting of our dispatch on, with thresholds the cases cannot trip (earlyExit only
// for the validating plugin, the only one that takes it).
func Modes(t testing.TB, validating bool) []Mode {
	t.Helper()
	settings := "circuitBreaker: {failureThreshold: 1000}\ntimeBudget: {deadlineMargin: 100ms}\n"
	if validating {
		settings += "earlyExit: true\n"
	}
	portcullis := LoadPortcullisEntry(t, settings, validating)
	// Upstream's entry names a webhook kubeconfig (1.35's upstream requires one).
	kubeconfig := filepath.Join(t.TempDir(), "webhooks.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	upstreamKind := "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: " + kubeconfig + "\n"
	return []Mode{
		{Name: "no settings", Config: ""},
		{Name: "upstream's kind", Config: upstreamKind},
		{Name: "our dispatch", Config: upstreamKind, Portcullis: portcullis, Ours: true},
	}
}

// requestTimeout is the server's default timeout for writes.
const requestTimeout = 34 * time.Second

// RequestContext is a context as the server gives admission: a deadline (the default write
// timeout) and a receipt time, so that a time budget is in force.
func RequestContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(endpointsrequest.WithReceivedTimestamp(context.Background(), time.Now()), requestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// plugin is what upstream's and our webhook plugins both are.
type plugin interface {
	admission.Interface
	admission.InitializationValidator
	SetAuthenticationInfoResolverWrapper(webhookutil.AuthenticationInfoResolverWrapper)
	SetServiceResolver(webhookutil.ServiceResolver)
	SetExternalKubeClientSet(kubernetes.Interface)
	SetExternalKubeInformerFactory(informers.SharedInformerFactory)
}

// Setup is what a case's plugin is initialized with.
type Setup struct {
	Resolver webhookutil.AuthenticationInfoResolverWrapper
	Service  webhookutil.ServiceResolver
	Client   kubernetes.Interface
	Informer informers.SharedInformerFactory
	Stop     <-chan struct{}
}

// Initialize initializes p as the server's admission initializers would, and starts its
// informers.
func Initialize(t testing.TB, p admission.Interface, s Setup) {
	t.Helper()
	w, ok := p.(plugin)
	if !ok {
		t.Fatalf("%T is not a webhook plugin", p)
	}
	if s.Resolver != nil {
		w.SetAuthenticationInfoResolverWrapper(s.Resolver)
	}
	if s.Service != nil {
		w.SetServiceResolver(s.Service)
	}
	w.SetExternalKubeClientSet(s.Client)
	w.SetExternalKubeInformerFactory(s.Informer)
	if err := w.ValidateInitialization(); err != nil {
		t.Fatalf("initializing %T: %v", p, err)
	}
	s.Informer.Start(s.Stop)
	s.Informer.WaitForCacheSync(s.Stop)
}

// Case is one of upstream's table cases, mutating or validating.
type Case struct {
	Name                   string
	IsCRD, IsDryRun        bool
	AdditionalLabels       map[string]string
	ExpectLabels           map[string]string
	ExpectAllow            bool
	ErrorContains          string
	ExpectAnnotations      map[string]string
	ExpectStatusCode       int32
	ExpectRejectionMetrics string
	ExpectReinvokeWebhooks map[string]bool
}

// FromValidating is a validating case as a Case.
func FromValidating(c webhooktesting.ValidatingTest) Case {
	return Case{Name: c.Name, IsCRD: c.IsCRD, IsDryRun: c.IsDryRun, AdditionalLabels: c.AdditionalLabels, ExpectLabels: c.ExpectLabels,
		ExpectAllow: c.ExpectAllow, ErrorContains: c.ErrorContains, ExpectAnnotations: c.ExpectAnnotations, ExpectStatusCode: c.ExpectStatusCode,
		ExpectRejectionMetrics: c.ExpectRejectionMetrics, ExpectReinvokeWebhooks: c.ExpectReinvokeWebhooks}
}

// FromMutating is a mutating case as a Case.
func FromMutating(c webhooktesting.MutatingTest) Case {
	return Case{Name: c.Name, IsCRD: c.IsCRD, IsDryRun: c.IsDryRun, AdditionalLabels: c.AdditionalLabels, ExpectLabels: c.ExpectLabels,
		ExpectAllow: c.ExpectAllow, ErrorContains: c.ErrorContains, ExpectAnnotations: c.ExpectAnnotations, ExpectStatusCode: c.ExpectStatusCode,
		ExpectRejectionMetrics: c.ExpectRejectionMetrics, ExpectReinvokeWebhooks: c.ExpectReinvokeWebhooks}
}

// Namespace is the namespace upstream's cases' fake configuration sources and attributes use.
const Namespace = "webhook-test"

// Attributes are the case's request attributes, as upstream's tests make them.
func (c Case) Attributes() admission.Attributes {
	if c.IsCRD {
		return webhooktesting.NewAttributeUnstructured(Namespace, c.AdditionalLabels, c.IsDryRun)
	}
	return webhooktesting.NewAttribute(Namespace, c.AdditionalLabels, c.IsDryRun)
}

// Check lists how the outcome of admitting attr (err) differs from what the case expects,
// as upstream's plugin tests check it. checkStatus asserts the status code (upstream's
// mutating test does; its validating test does not).
func (c Case) Check(attr admission.Attributes, err error, checkStatus bool) []string {
	var problems []string
	if c.ExpectAllow != (err == nil) {
		problems = append(problems, fmt.Sprintf("expected allowed=%v, got err=%v", c.ExpectAllow, err))
	}
	if c.ExpectLabels != nil {
		if got := attr.GetObject().(metav1.Object).GetLabels(); !reflect.DeepEqual(c.ExpectLabels, got) {
			problems = append(problems, fmt.Sprintf("expected labels %v, got %v", c.ExpectLabels, got))
		}
	}
	if c.ErrorContains != "" && (err == nil || !strings.Contains(err.Error(), c.ErrorContains)) {
		problems = append(problems, fmt.Sprintf("expected an error saying %q, got %v", c.ErrorContains, err))
	}
	if statusErr, isStatus := err.(*apierrors.StatusError); err != nil && !isStatus {
		problems = append(problems, fmt.Sprintf("expected a StatusError, got %T", err))
	} else if isStatus && checkStatus && statusErr.ErrStatus.Code != c.ExpectStatusCode {
		problems = append(problems, fmt.Sprintf("expected status code %d, got %d", c.ExpectStatusCode, statusErr.ErrStatus.Code))
	}
	if c.ExpectRejectionMetrics != "" {
		want := `
# HELP apiserver_admission_webhook_rejection_count [ALPHA] Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.
# TYPE apiserver_admission_webhook_rejection_count counter
` + c.ExpectRejectionMetrics + "\n"
		if err := testutil.CollectAndCompare(admissionmetrics.Metrics.WebhookRejectionGathererForTest(), strings.NewReader(want), "apiserver_admission_webhook_rejection_count"); err != nil {
			problems = append(problems, fmt.Sprintf("rejection metrics: %v", err))
		}
	}
	fake, ok := attr.(*webhooktesting.FakeAttributes)
	if !ok {
		return append(problems, fmt.Sprintf("attributes are %T, not upstream's FakeAttributes", attr))
	}
	got := fake.GetAnnotations(auditinternal.LevelMetadata)
	if len(c.ExpectAnnotations) == 0 {
		if len(got) != 0 {
			problems = append(problems, fmt.Sprintf("expected no annotations, got %v", got))
		}
	} else if !reflect.DeepEqual(c.ExpectAnnotations, got) {
		problems = append(problems, fmt.Sprintf("expected annotations %v, got %v", c.ExpectAnnotations, got))
	}
	return problems
}

// ResetRejectionMetrics resets upstream's rejection counter before a case that checks it.
func (c Case) ResetRejectionMetrics() {
	if c.ExpectRejectionMetrics != "" {
		admissionmetrics.Metrics.WebhookRejectionGathererForTest().Reset()
	}
}

// Report fails t with the case's problems, unless the mode is ours and the case is listed
// in changed (by name, with the reason our dispatch legitimately differs): then it must
// differ, or the list is stale.
func Report(t *testing.T, mode Mode, name string, problems []string, changed map[string]string) {
	t.Helper()
	reason, listed := changed[name]
	switch {
	case mode.Ours && listed && len(problems) == 0:
		t.Errorf("listed as changed by our dispatch (%s), but it passes upstream's assertions: take it off the list", reason)
	case mode.Ours && listed:
		t.Logf("differs from upstream's expectation, as listed (%s): %s", reason, strings.Join(problems, "; "))
	default:
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// SampleCount is how many observations (histograms) or how much (counters) the process's
// registry holds for metric, over the series whose labels include labels.
func SampleCount(t testing.TB, metric string, labels map[string]string) uint64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, family := range families {
		if family.GetName() != metric {
			continue
		}
	series:
		for _, m := range family.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.GetHistogram() != nil:
				total += m.GetHistogram().GetSampleCount()
			case m.GetCounter() != nil:
				total += uint64(m.GetCounter().GetValue())
			}
		}
	}
	return total
}

// Runner is what the shared runners need of one of the two plugins.
type Runner struct {
	// Build builds the plugin in Mode, checking it is upstream's or ours as Mode says.
	Build func(t *testing.T) admission.Interface
	// Source serves webhooks (in the validating shape upstream's shared tables use) as the
	// plugin's configurations.
	Source func(hooks []admissionregistrationv1.ValidatingWebhook, stop <-chan struct{}) (kubernetes.Interface, informers.SharedInformerFactory)
	// Call admits attr through the plugin.
	Call func(ctx context.Context, p admission.Interface, attr admission.Attributes) error
	// Mutating: the plugin's latency is the mutating webhooks' tracker's.
	Mutating bool
}

// Setup initializes p, as Initialize does, with upstream's test resolvers (resolver counting
// cache misses in misses, or panicking when panicking is set) and client.
func (r Runner) Setup(t *testing.T, p admission.Interface, client kubernetes.Interface, informer informers.SharedInformerFactory, server *url.URL, misses *int32, stop <-chan struct{}) {
	t.Helper()
	Initialize(t, p, Setup{
		Resolver: webhooktesting.Wrapper(webhooktesting.NewAuthenticationInfoResolver(misses)),
		Service:  webhooktesting.NewServiceResolver(*server), Client: client, Informer: informer, Stop: stop,
	})
}

// Initialized builds the plugin and initializes it with hooks as its configurations.
func (r Runner) Initialized(t *testing.T, hooks []admissionregistrationv1.ValidatingWebhook) admission.Interface {
	t.Helper()
	p := r.Build(t)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	client, informer := r.Source(hooks, stop)
	Initialize(t, p, Setup{
		Resolver: webhooktesting.Wrapper(webhooktesting.NewAuthenticationInfoResolver(new(int32))),
		Client:   client, Informer: informer, Stop: stop,
	})
	return p
}

// Request admits one request (Request's) through p, and returns its attributes, the
// plugin's error and what it recorded.
func (r Runner) Request(t *testing.T, p admission.Interface) (admission.Attributes, error, *Recorder) {
	ctx, attr, recorded := Request(t)
	err := r.Call(ctx, p, attr)
	recorded.Returned()
	return attr, err, recorded
}

// Ours is a mode of our dispatch with the settings of config: YAML fields of the Portcullis
// entry's webhookDispatch.mutating or .validating (circuitBreaker, timeBudget, earlyExit, …).
func Ours(t testing.TB, config string, validating bool) Mode {
	t.Helper()
	return Mode{Name: "our dispatch", Portcullis: LoadPortcullisEntry(t, config, validating), Ours: true}
}

// LoadPortcullisEntry loads, as the command does (portcullisconfig.Load), an admission config
// file whose Portcullis entry sets settings (YAML) as one webhook plugin's dispatch.
func LoadPortcullisEntry(t testing.TB, settings string, validating bool) *portcullisapi.PortcullisConfiguration {
	t.Helper()
	plugin := "mutating"
	if validating {
		plugin = "validating"
	}
	var b strings.Builder
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: " + portcullisconfig.EntryName +
		"\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: PortcullisConfiguration\n    webhookDispatch:\n      " + plugin + ":\n")
	for _, line := range strings.Split(strings.TrimRight(settings, "\n"), "\n") {
		b.WriteString("        " + line + "\n")
	}
	file := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := portcullisconfig.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return &loaded.PortcullisConfiguration
}

// RunCachedClientCases runs upstream's NewCachedClientTestcases: one plugin for every case,
// whose client cache outlives their configurations.
func (r Runner) RunCachedClientCases(t *testing.T, server *url.URL, stop <-chan struct{}) {
	p := r.Build(t)
	for _, tc := range webhooktesting.NewCachedClientTestcases(server) {
		client, informer := r.Source(tc.Webhooks, stop)
		misses := new(int32)
		r.Setup(t, p, client, informer, server, misses, stop)
		err := r.Call(RequestContext(t), p, webhooktesting.NewAttribute(Namespace, nil, false))
		if tc.ExpectAllow != (err == nil) {
			t.Errorf("%s: expected allowed=%v, got err=%v", tc.Name, tc.ExpectAllow, err)
		}
		if tc.ExpectCacheMiss != (*misses > 0) {
			t.Errorf("%s: expected a cache miss: %v; AuthenticationInfoResolver calls: %d", tc.Name, tc.ExpectCacheMiss, *misses)
		}
	}
}

// RunDurationCases runs upstream's NewValidationDurationTestCases against a webhook server
// that steps a fake clock: the latency trackers in the request's context add up the calls
// (mutating: their sum; validating, in parallel: at least the longest).
func (r Runner) RunDurationCases(t *testing.T, stop <-chan struct{}) {
	clk := clocktesting.FakeClock{}
	stepping := webhooktesting.NewTestServerWithHandler(t, webhooktesting.ClockSteppingWebhookHandler(t, &clk))
	stepping.StartTLS()
	defer stepping.Close()
	server, err := url.ParseRequestURI(stepping.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range webhooktesting.NewValidationDurationTestCases(server) {
		t.Run(tc.Name, func(t *testing.T) {
			ctx := RequestContext(t)
			if tc.InitContext {
				ctx = endpointsrequest.WithLatencyTrackersAndCustomClock(ctx, &clk)
			}
			p := r.Build(t)
			client, informer := r.Source(tc.Webhooks, stop)
			r.Setup(t, p, client, informer, server, new(int32), stop)
			_ = r.Call(ctx, p, webhooktesting.NewAttribute(Namespace, nil, tc.IsDryRun))
			trackers, ok := endpointsrequest.LatencyTrackersFrom(ctx)
			if ok != tc.InitContext {
				t.Fatalf("latency trackers in the context: %v, want %v", ok, tc.InitContext)
			}
			if !ok {
				return
			}
			mine, other := trackers.ValidatingWebhookTracker.GetLatency(), trackers.MutatingWebhookTracker.GetLatency()
			if r.Mutating {
				mine, other = other, mine
				if mine != tc.ExpectedDurationSum {
					t.Errorf("mutating webhook latency %s, want %s", mine, tc.ExpectedDurationSum)
				}
			} else if mine < tc.ExpectedDurationMax {
				t.Errorf("validating webhook latency %s, want at least %s", mine, tc.ExpectedDurationMax)
			}
			if other != 0 {
				t.Errorf("the other kind's webhook latency %s, want 0", other)
			}
		})
	}
}
