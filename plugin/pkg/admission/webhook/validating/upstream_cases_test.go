package validating

import (
	"context"
	"net/url"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission"
	webhooktesting "k8s.io/apiserver/pkg/admission/plugin/webhook/testing"
	upstreamvalidating "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/webhooktest"
)

// changedByOurDispatch lists upstream's cases whose expectations our dispatch legitimately
// does not meet with its settings on, each with the reason. Empty: every case passes.
var changedByOurDispatch = map[string]string{}

// TestUpstreamCases runs upstream's validating webhook tables through the plugin this
// registry builds, in each mode: with no settings it must be upstream's plugin; with every
// setting of ours on it must pass upstream's assertions all the same.
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

	for _, mode := range webhooktest.Modes(t, webhook.ValidatingPlugin) {
		r := runner(mode)
		t.Run(mode.Name, func(t *testing.T) {
			// The tables whose cases each build a plugin and check one request.
			for _, table := range []struct {
				name     string
				cases    []webhooktesting.ValidatingTest
				resolver webhookutil.AuthenticationInfoResolver
			}{
				{"NewNonMutatingTestCases", webhooktesting.NewNonMutatingTestCases(serverURL), webhooktesting.NewAuthenticationInfoResolver(new(int32))},
				{"NewNonMutatingPanicTestCases", webhooktesting.NewNonMutatingPanicTestCases(serverURL), webhooktesting.NewPanickingAuthenticationInfoResolver("Start panicking!")},
			} {
				t.Run(table.name, func(t *testing.T) {
					for _, tc := range table.cases {
						t.Run(tc.Name, func(t *testing.T) {
							p := r.Build(t)
							client, informer := r.Source(tc.Webhooks, stop)
							webhooktest.Initialize(t, p, webhooktest.Setup{
								Resolver: webhooktesting.Wrapper(table.resolver),
								Service:  webhooktesting.NewServiceResolver(*serverURL), Client: client, Informer: informer, Stop: stop,
							})
							c := webhooktest.FromValidating(tc)
							c.ResetRejectionMetrics()
							attr := c.Attributes()
							err := r.Call(webhooktest.RequestContext(t), p, attr)
							// Upstream's validating test asserts no status codes.
							webhooktest.Report(t, mode, tc.Name, c.Check(attr, err, false), changedByOurDispatch)
						})
					}
				})
			}
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
			_, upstream := p.(*upstreamvalidating.Plugin)
			if ours != mode.Ours || upstream == mode.Ours {
				t.Fatalf("built %T; want ours: %v", p, mode.Ours)
			}
			return p
		},
		Source: func(hooks []admissionregistrationv1.ValidatingWebhook, stop <-chan struct{}) (kubernetes.Interface, informers.SharedInformerFactory) {
			return webhooktesting.NewFakeValidatingDataSource(webhooktest.Namespace, hooks, stop)
		},
		Call: func(ctx context.Context, p admission.Interface, attr admission.Attributes) error {
			return p.(admission.ValidationInterface).Validate(ctx, attr, webhooktesting.NewObjectInterfacesForTest())
		},
	}
}
