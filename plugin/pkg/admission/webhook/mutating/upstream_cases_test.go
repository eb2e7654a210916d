package mutating

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission"
	upstreammutating "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	webhooktesting "k8s.io/apiserver/pkg/admission/plugin/webhook/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/webhooktest"
)

// changedByOurDispatch lists upstream's cases whose expectations our dispatch legitimately
// does not meet with its settings on, each with the reason. Empty: every case passes.
var changedByOurDispatch = map[string]string{}

// configurationName is the configuration upstream's fake sources put the cases' webhooks in.
const configurationName = "test-webhooks"

// TestUpstreamCases runs upstream's mutating webhook tables (its own, and the validating ones
// converted, as upstream's plugin test runs them) through the plugin this registry builds, in
// each mode: with no settings it must be upstream's plugin; with every setting of ours on it
// must pass upstream's assertions all the same.
func TestUpstreamCases(t *testing.T) {
	server := webhooktesting.NewTestServer(t)
	server.StartTLS()
	defer server.Close()
	serverURL, err := url.ParseRequestURI(server.URL)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)

	for _, mode := range webhooktest.Modes(t, webhook.MutatingPlugin) {
		r := runner(mode)
		t.Run(mode.Name, func(t *testing.T) {
			t.Run("NewMutatingTestCases", func(t *testing.T) {
				cases := append(webhooktesting.NewMutatingTestCases(serverURL, configurationName),
					webhooktesting.ConvertToMutatingTestCases(webhooktesting.NewNonMutatingTestCases(serverURL), configurationName)...)
				for _, tc := range cases {
					t.Run(tc.Name, func(t *testing.T) {
						p := r.Build(t)
						client, informer := webhooktesting.NewFakeMutatingDataSource(webhooktest.Namespace, tc.Webhooks, stop)
						r.Setup(t, p, client, informer, serverURL, new(int32), stop)
						c := webhooktest.FromMutating(tc)
						c.ResetRejectionMetrics()
						attr := c.Attributes()
						err := r.Call(webhooktest.RequestContext(t), p, attr)
						problems := append(c.Check(attr, err, true), reinvocationProblems(attr, tc.ExpectReinvokeWebhooks)...)
						webhooktest.Report(t, mode, tc.Name, problems, changedByOurDispatch)
					})
				}
			})
			t.Run("NewCachedClientTestcases", func(t *testing.T) { r.RunCachedClientCases(t, serverURL, stop) })
			t.Run("NewValidationDurationTestCases", func(t *testing.T) { r.RunDurationCases(t, stop) })
		})
	}
}

// runner builds the plugin in mode for the shared runners.
func runner(mode webhooktest.Mode) webhooktest.Runner {
	return webhooktest.Runner{
		Build: func(t *testing.T) admission.Interface {
			t.Helper()
			p, err := New(mode.Reader(), mode.Portcullis)
			if err != nil {
				t.Fatal(err)
			}
			_, ours := p.(*Plugin)
			_, upstream := p.(*upstreammutating.Plugin)
			if ours != mode.Ours || upstream == mode.Ours {
				t.Fatalf("built %T; want ours: %v", p, mode.Ours)
			}
			return p
		},
		Source: func(hooks []admissionregistrationv1.ValidatingWebhook, stop <-chan struct{}) (kubernetes.Interface, informers.SharedInformerFactory) {
			return webhooktesting.NewFakeMutatingDataSource(webhooktest.Namespace, webhooktesting.ConvertToMutatingWebhooks(hooks), stop)
		},
		Call: func(ctx context.Context, p admission.Interface, attr admission.Attributes) error {
			return p.(admission.MutationInterface).Admit(ctx, attr, webhooktesting.NewObjectInterfacesForTest())
		},
		Mutating: true,
	}
}

// reinvocationProblems checks, as upstream's test does, which webhooks a second round would
// call again; upstream's plugin and ours both keep their state under PluginName.
func reinvocationProblems(attr admission.Attributes, want map[string]bool) []string {
	if len(want) == 0 {
		return nil
	}
	reinvocation := attr.GetReinvocationContext()
	reinvocation.SetIsReinvoke()
	state, ok := reinvocation.Value(PluginName).(interface{ ShouldReinvokeWebhook(string) bool })
	if !ok {
		return []string{fmt.Sprintf("the reinvocation context holds %T under %s", reinvocation.Value(PluginName), PluginName)}
	}
	var problems []string
	for name, expect := range want {
		if got := state.ShouldReinvokeWebhook(fmt.Sprintf("%s/%s/0", configurationName, name)); got != expect {
			problems = append(problems, fmt.Sprintf("webhook %s reinvoked: %v, want %v", name, got, expect))
		}
	}
	return problems
}
