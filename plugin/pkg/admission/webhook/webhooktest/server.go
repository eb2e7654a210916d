package webhooktest

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/testcerts"
	webhooktesting "k8s.io/apiserver/pkg/admission/plugin/webhook/testing"
)

// Respond answers one admission request sent to path; nil drops the connection's answer
// (the handler returns without writing, so the call fails).
type Respond func(r *http.Request, request *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// ReviewServer is an HTTPS webhook server with upstream's test certificates, answering
// admission/v1 reviews with respond.
type ReviewServer struct {
	URL *url.URL
}

// StartReviewServer starts a ReviewServer that asks for upstream's test client certificate
// (the server's admission configuration must give it); it stops when the test ends.
func StartReviewServer(t testing.TB, respond Respond) *ReviewServer {
	t.Helper()
	return startReviewServer(t, respond, true)
}

// StartOpenReviewServer starts a ReviewServer that asks for no client certificate, as most
// webhooks in clusters are served: a server calls it with no admission configuration.
func StartOpenReviewServer(t testing.TB, respond Respond) *ReviewServer {
	t.Helper()
	return startReviewServer(t, respond, false)
}

func startReviewServer(t testing.TB, respond Respond, clientCert bool) *ReviewServer {
	t.Helper()
	server := webhooktesting.NewTestServerWithHandler(t, func(w http.ResponseWriter, r *http.Request) {
		review, ok := readReview(w, r)
		if !ok {
			return
		}
		response := respond(r, review.Request)
		if response == nil {
			return
		}
		response.UID = review.Request.UID
		review.Request, review.Response = nil, response
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	})
	if !clientCert {
		server.TLS.ClientAuth = tls.NoClientCert
	}
	server.StartTLS()
	t.Cleanup(server.Close)
	return &ReviewServer{URL: mustParse(t, server.URL)}
}

// readReview decodes the admission review r carries, answering 400 when it is none.
func readReview(w http.ResponseWriter, r *http.Request) (*admissionv1.AdmissionReview, bool) {
	review := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "not an admission review", http.StatusBadRequest)
		return nil, false
	}
	return review, true
}

func mustParse(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.ParseRequestURI(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// ClientConfig calls the server at path.
func (s *ReviewServer) ClientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	u := *s.URL
	u.Path = path
	str := u.String()
	return admissionregistrationv1.WebhookClientConfig{URL: &str, CABundle: testcerts.CACert}
}

// ClosedClientConfig calls a loopback port that was just listened on and closed: every
// call is refused.
func ClosedClientConfig(t testing.TB, path string) admissionregistrationv1.WebhookClientConfig {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	str := "https://" + addr + path
	return admissionregistrationv1.WebhookClientConfig{URL: &str, CABundle: testcerts.CACert}
}
