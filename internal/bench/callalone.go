package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
)

// callAloneTimeout is the timeout of each call alone, as a webhook's timeoutSeconds default.
const callAloneTimeout = 10 * time.Second

// timeCallsAlone makes, from this process and with no API server around it, the call a
// dispatcher makes to a webhook, as upstream's makes it: a client from webhookutil's
// ClientManager (client-go's REST client, JSON, HTTP/2 over TLS) posts review and decodes
// the answer; n calls one after another, review's object renamed for each so that the
// webhook's record tells them apart. Each call's time less the webhook's own handling is
// what the call costs its caller at least: a dispatch that makes one such call per webhook
// cannot spend less per webhook at the API server.
func timeCallsAlone(ctx context.Context, webhooks *webhookServer, path string, review []byte, n int) (*Latencies, error) {
	var sent struct {
		Request struct {
			Name string `json:"name"`
		} `json:"request"`
	}
	if err := json.Unmarshal(review, &sent); err != nil || sent.Request.Name == "" {
		return nil, fmt.Errorf("the review %s received names no object (%v)", path, err)
	}
	manager, err := webhookutil.NewClientManager([]schema.GroupVersion{admissionv1.SchemeGroupVersion}, admissionv1.AddToScheme)
	if err != nil {
		return nil, err
	}
	resolver, err := webhookutil.NewDefaultAuthenticationInfoResolver("")
	if err != nil {
		return nil, err
	}
	manager.SetAuthenticationInfoResolver(resolver)
	manager.SetServiceResolver(webhookutil.NewDefaultServiceResolver())
	url := webhooks.baseURL + path
	client, err := manager.HookClient(webhookutil.ClientConfig{Name: "call-alone", URL: url, CABundle: webhooks.caBundle})
	if err != nil {
		return nil, err
	}
	named := []byte(`"name":"` + sent.Request.Name + `"`)
	names := make([]string, n)
	latencies := make([]time.Duration, n)
	webhooks.takeSpent()
	for i := range n {
		names[i] = fmt.Sprintf("call-alone-%d", i)
		body := bytes.ReplaceAll(review, named, []byte(`"name":"`+names[i]+`"`))
		callCtx, cancel := context.WithTimeout(ctx, callAloneTimeout)
		start := time.Now()
		var answer admissionv1.AdmissionReview
		err := client.Post().SetHeader("Content-Type", runtime.ContentTypeJSON).Body(body).Timeout(callAloneTimeout).Do(callCtx).Into(&answer)
		latencies[i] = time.Since(start)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("calling %s: %w", path, err)
		}
		if answer.Response == nil || !answer.Response.Allowed {
			return nil, fmt.Errorf("%s did not allow the call alone: %+v", path, answer.Response)
		}
	}
	spent := webhooks.takeSpent()
	for i, name := range names {
		s := spent[name]
		if len(s.Calls) != 1 {
			return nil, fmt.Errorf("%s recorded %d calls about %s, want 1", path, len(s.Calls), name)
		}
		latencies[i] -= s.Time()
	}
	return newLatencies(latencies), nil
}
