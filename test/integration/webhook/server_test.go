package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-k8s/portcullis/internal/pki"
)

// call is one admission request a webhook server received.
type call struct {
	// APIVersion is the AdmissionReview version the apiserver sent.
	APIVersion string
	// Request is the review's request; v1beta1 requests are decoded into the v1 type, whose
	// fields are the same.
	Request *admissionv1.AdmissionRequest
	// Header is the HTTP request's header.
	Header http.Header
	// PeerCertificates are the client certificates the apiserver presented, if any.
	PeerCertificates []*x509.Certificate
	// ServerName is the TLS server name (SNI) the apiserver asked for.
	ServerName string
	// Body is the request's body as the apiserver sent it.
	Body []byte
}

// reviewFunc answers one admission review. The server fills in the response's UID.
type reviewFunc func(c *call) *admissionv1.AdmissionResponse

// rawFunc writes whatever it likes in answer to an admission review, for the cases that
// send the apiserver something other than a well-formed answer.
type rawFunc func(w http.ResponseWriter, r *http.Request, c *call)

// webhookServer is an HTTPS admission webhook server on 127.0.0.1. Tests register a handler
// per path and read back the calls each path received.
type webhookServer struct {
	// URL is https://127.0.0.1:<port>, without a path.
	URL string
	// CABundle is the PEM of the CA that signed the server's certificate.
	CABundle []byte

	mu       sync.Mutex
	handlers map[string]rawFunc
	calls    map[string][]*call
}

// serverOptions say how a webhookServer presents itself.
type serverOptions struct {
	// ca signs the serving certificate.
	ca *pki.CA
	// certName names the certificate's files; servers with different SANs need different names.
	certName string
	// dnsNames are the certificate's DNS SANs besides 127.0.0.1.
	dnsNames []string
	// clientCAs, when set, makes the server require a client certificate signed by them.
	clientCAs *x509.CertPool
}

// startWebhookServer serves on a fresh port of 127.0.0.1 until the test ends.
func startWebhookServer(t *testing.T, dir string, opts serverOptions) *webhookServer {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveWebhooks(t, dir, opts, listener)
}

// serveWebhooks serves on listener, which must be on 127.0.0.1, until the test ends.
func serveWebhooks(t *testing.T, dir string, opts serverOptions, listener net.Listener) *webhookServer {
	t.Helper()
	pair, err := opts.ca.ServingCert(dir, opts.certName, []net.IP{net.IPv4(127, 0, 0, 1)}, opts.dnsNames)
	if err != nil {
		t.Fatalf("writing the serving certificate %s: %v", opts.certName, err)
	}
	cert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	if err != nil {
		t.Fatalf("loading the serving certificate %s: %v", opts.certName, err)
	}
	caPEM, err := os.ReadFile(opts.ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if opts.clientCAs != nil {
		tlsConfig.ClientCAs = opts.clientCAs
		tlsConfig.ClientAuth = tls.RequireAndVerifyClientCert
	}
	s := &webhookServer{
		URL:      "https://" + listener.Addr().String(),
		CABundle: caPEM,
		handlers: map[string]rawFunc{},
		calls:    map[string][]*call{},
	}
	server := &http.Server{
		Handler:   s,
		TLSConfig: tlsConfig,
		// Refused handshakes (the wrong-CA and client-certificate cases) are expected; keep
		// them out of the test output.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() { _ = server.ServeTLS(listener, "", "") }()
	t.Cleanup(func() { _ = server.Close() })
	return s
}

// handle serves path with fn, answering in the AdmissionReview version the request came in.
func (s *webhookServer) handle(path string, fn reviewFunc) {
	s.handleRaw(path, func(w http.ResponseWriter, _ *http.Request, c *call) {
		response := fn(c)
		if response == nil {
			response = &admissionv1.AdmissionResponse{Allowed: true}
		}
		response.UID = c.Request.UID
		writeReview(w, c.APIVersion, response)
	})
}

// handleRaw serves path with fn, which writes the HTTP response itself.
func (s *webhookServer) handleRaw(path string, fn rawFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[path] = fn
}

// callsTo returns the calls path has received so far, oldest first.
func (s *webhookServer) callsTo(path string) []*call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*call(nil), s.calls[path]...)
}

// clientConfig reaches path on this server by URL, trusting the server's CA.
func (s *webhookServer) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	url := s.URL + path
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: s.CABundle}
}

func (s *webhookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	fn, ok := s.handlers[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no webhook at "+r.URL.Path, http.StatusNotFound)
		return
	}
	c, err := readReview(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls[r.URL.Path] = append(s.calls[r.URL.Path], c)
	s.mu.Unlock()
	fn(w, r, c)
}

// readReview decodes an AdmissionReview of either version.
func readReview(r *http.Request) (*call, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the review: %w", err)
	}
	var typeMeta metav1.TypeMeta
	if err := json.Unmarshal(body, &typeMeta); err != nil {
		return nil, fmt.Errorf("decoding the review: %w", err)
	}
	c := &call{APIVersion: typeMeta.APIVersion, Header: r.Header.Clone(), Body: body}
	if r.TLS != nil {
		c.PeerCertificates = r.TLS.PeerCertificates
		c.ServerName = r.TLS.ServerName
	}
	switch typeMeta.APIVersion {
	case admissionv1.SchemeGroupVersion.String():
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil {
			return nil, fmt.Errorf("decoding the v1 review: %w", err)
		}
		c.Request = review.Request
	case admissionv1beta1.SchemeGroupVersion.String():
		var review admissionv1beta1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil {
			return nil, fmt.Errorf("decoding the v1beta1 review: %w", err)
		}
		// The two versions' requests have the same fields and JSON names.
		c.Request = &admissionv1.AdmissionRequest{}
		if err := convertJSON(review.Request, c.Request); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unexpected AdmissionReview apiVersion %q", typeMeta.APIVersion)
	}
	if c.Request == nil {
		return nil, fmt.Errorf("the review has no request")
	}
	return c, nil
}

// writeReview answers with an AdmissionReview of apiVersion holding response.
func writeReview(w http.ResponseWriter, apiVersion string, response *admissionv1.AdmissionResponse) {
	var review any
	switch apiVersion {
	case admissionv1beta1.SchemeGroupVersion.String():
		v1beta1Response := &admissionv1beta1.AdmissionResponse{}
		if err := convertJSON(response, v1beta1Response); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		review = &admissionv1beta1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "AdmissionReview"},
			Response: v1beta1Response,
		}
	default:
		review = &admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
			Response: response,
		}
	}
	writeJSON(w, review)
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// convertJSON copies in into out through JSON, for types that share their JSON shape.
func convertJSON(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// objectMeta decodes the metadata of the request's object (or, when there is none, of its
// old object).
func (c *call) objectMeta() metav1.ObjectMeta {
	raw := c.Request.Object.Raw
	if len(raw) == 0 {
		raw = c.Request.OldObject.Raw
	}
	var obj metav1.PartialObjectMetadata
	_ = json.Unmarshal(raw, &obj)
	return obj.ObjectMeta
}

// closedPort returns a loopback port nothing listens on: it was bound a moment ago and
// released, so connecting to it is refused.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}
