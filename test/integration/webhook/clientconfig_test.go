package webhook

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// testClientConfig covers the two ways to reach a webhook: a URL with a CA bundle, and a
// Service reference.
func testClientConfig(t *testing.T, e *env) {
	t.Run("url with caBundle", func(t *testing.T) {
		k := newCase(e.main, "url")
		ns := k.namespace(t, nil)
		path := k.path("nested/validate")
		k.c.hooks.handle(path, func(*call) *admissionv1.AdmissionResponse { return nil })
		hook := validatingHook(k.hookName("url"), k.c.hooks.clientConfig(path), k.selector(nil), configMapRule(opCreate))
		k.c.createValidating(t, validatingConfig(k.configName("v"), hook))
		k.mustCreateConfigMap(t, k.configMap(ns, "by-url", nil))
		calls := callsFor(k.c.hooks, path, "by-url")
		if len(calls) != 1 {
			t.Fatalf("the webhook at %s%s was called %d times, want once", k.c.hooks.URL, path, len(calls))
		}
		if calls[0].ServerName != "" {
			t.Errorf("TLS server name %q, want none: the URL's host is an IP address", calls[0].ServerName)
		}
	})

	// The Service resolves to loopback through an EndpointSlice. Validation refuses loopback
	// addresses in IPv4 and IPv6 slices (ValidateEndpointIP), but an FQDN slice's address is
	// only checked to be a DNS subdomain, which "127.0.0.1" is, and the resolver dials its
	// first address with the slice's port whatever the address type.
	t.Run("service reference resolved through an EndpointSlice with --enable-aggregator-routing", func(t *testing.T) {
		k := newCase(e.configured, "service")
		ns := k.namespace(t, nil)
		const serviceName, servicePort, path = "admission", int32(443), "/service/validate"
		serverName := serviceName + "." + ns + ".svc"
		// The apiserver verifies the certificate against the Service's DNS name.
		backend := startWebhookServer(t, t.TempDir(), serverOptions{ca: e.ca, certName: "service-webhook", dnsNames: []string{serverName}})
		backend.handle(path, func(*call) *admissionv1.AdmissionResponse { return nil })
		k.createLoopbackService(t, ns, serviceName, servicePort, backend)

		hook := validatingHook(k.hookName("service"), admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: serviceName, Path: ptr(path), Port: ptr(servicePort)},
			CABundle: backend.CABundle,
		}, k.selector(nil), configMapRule(opCreate))
		k.c.createValidating(t, validatingConfig(k.configName("v"), hook))
		// The server's Service and EndpointSlice caches may trail the configuration's: poll
		// with dry-run requests until the webhook is reached through them.
		eventually(t, pollTimeout, "the webhook to be reached through Service "+ns+"/"+serviceName, func(ctx context.Context) (bool, error) {
			_, err := k.c.Client.CoreV1().ConfigMaps(ns).Create(ctx, k.configMap(ns, "service-probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil && len(backend.callsTo(path)) > 0, err
		})

		k.mustCreateConfigMap(t, k.configMap(ns, "by-service", nil))
		calls := callsFor(backend, path, "by-service")
		if len(calls) != 1 {
			t.Fatalf("the webhook behind Service %s/%s was called %d times at %s, want once", ns, serviceName, len(calls), path)
		}
		if calls[0].ServerName != serverName {
			t.Errorf("TLS server name %q, want the Service's %q", calls[0].ServerName, serverName)
		}
	})
}

// createLoopbackService creates a headless Service (no cluster IP is allocated) whose port
// leads, through an FQDN EndpointSlice, to backend on 127.0.0.1.
func (k *suiteCase) createLoopbackService(t *testing.T, ns, name string, port int32, backend *webhookServer) {
	t.Helper()
	u, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	backendPort, err := strconv.Atoi(u.Port())
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("backend %s is not on 127.0.0.1", backend.URL)
	}
	const portName = "https"
	if _, err := k.c.Client.CoreV1().Services(ns).Create(k.ctx(t), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Ports:     []corev1.ServicePort{{Name: portName, Port: port, Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Service %s/%s: %v", ns, name, err)
	}
	if _, err := k.c.Client.DiscoveryV1().EndpointSlices(ns).Create(k.ctx(t), &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-loopback", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{u.Hostname()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr(portName), Port: ptr(int32(backendPort)), Protocol: ptr(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the EndpointSlice of %s/%s: %v", ns, name, err)
	}
}

// testAuthentication: the configured server's admission configuration names a kubeconfig
// that gives one webhook host a client certificate and another a bearer token; each webhook
// server checks what it was given. Hosts the kubeconfig does not name get nothing.
func testAuthentication(t *testing.T, e *env) {
	k := newCase(e.configured, "auth")
	ns := k.namespace(t, nil)
	const path = "/auth/validate"
	checkCert := func(c *call) *admissionv1.AdmissionResponse {
		if len(c.PeerCertificates) == 0 || c.PeerCertificates[0].Subject.CommonName != webhookClientUser {
			return denied("no client certificate for " + webhookClientUser)
		}
		return nil
	}
	e.certAuth.handle(path, checkCert)
	e.certAuthUnlisted.handle(path, checkCert)
	checkToken := func(w http.ResponseWriter, _ *http.Request, c *call) {
		if c.Header.Get("Authorization") != "Bearer "+webhookToken {
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		writeReview(w, c.APIVersion, &admissionv1.AdmissionResponse{UID: c.Request.UID, Allowed: true})
	}
	e.tokenAuth.handleRaw(path, checkToken)
	e.tokenAuthUnlisted.handleRaw(path, checkToken)

	servers := map[string]*webhookServer{
		"client-certificate":          e.certAuth,
		"client-certificate-unlisted": e.certAuthUnlisted,
		"token":                       e.tokenAuth,
		"token-unlisted":              e.tokenAuthUnlisted,
	}
	var hooks []admissionregistrationv1.ValidatingWebhook
	for name, server := range servers {
		hook := validatingHook(k.hookName(name), server.clientConfig(path), k.selector(nil), configMapRule(opCreate))
		hook.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"auth": name}}
		hooks = append(hooks, hook)
	}
	slices.SortFunc(hooks, func(a, b admissionregistrationv1.ValidatingWebhook) int { return strings.Compare(a.Name, b.Name) })
	k.c.createValidating(t, validatingConfig(k.configName("v"), hooks...))

	create := func(t *testing.T, name string) error {
		_, err := k.createConfigMap(t, k.configMap(ns, name, map[string]string{"auth": name}))
		return err
	}
	t.Run("client certificate from the kubeconfig", func(t *testing.T) {
		if err := create(t, "client-certificate"); err != nil {
			t.Fatalf("want admitted, got %v", err)
		}
		calls := callsFor(e.certAuth, path, "client-certificate")
		if len(calls) != 1 {
			t.Fatalf("the webhook was called %d times, want once", len(calls))
		}
		if certs := calls[0].PeerCertificates; len(certs) == 0 || certs[0].Subject.CommonName != webhookClientUser {
			t.Errorf("client certificates %v, want one for %q", certs, webhookClientUser)
		}
	})
	t.Run("bearer token from the kubeconfig", func(t *testing.T) {
		if err := create(t, "token"); err != nil {
			t.Fatalf("want admitted, got %v", err)
		}
		if n := len(callsFor(e.tokenAuth, path, "token")); n != 1 {
			t.Errorf("the webhook was called %d times, want once", n)
		}
	})
	t.Run("a host the kubeconfig does not name gets no client certificate", func(t *testing.T) {
		wantRefused(t, create(t, "client-certificate-unlisted"), "failed calling webhook", k.hookName("client-certificate-unlisted"))
		if n := len(e.certAuthUnlisted.callsTo(path)); n != 0 {
			t.Errorf("the webhook completed %d calls without a client certificate, want none", n)
		}
	})
	t.Run("a host the kubeconfig does not name gets no token", func(t *testing.T) {
		wantRefused(t, create(t, "token-unlisted"), "failed calling webhook", k.hookName("token-unlisted"))
		calls := callsFor(e.tokenAuthUnlisted, path, "token-unlisted")
		if len(calls) != 1 {
			t.Fatalf("the webhook was called %d times, want once", len(calls))
		}
		if got := calls[0].Header.Get("Authorization"); got != "" {
			t.Errorf("the webhook received Authorization %q, want none", got)
		}
	})
}

// testRecommendedPlugins: the documented recommended plugin set, in the current flag and in
// the deprecated one, gives a server that loads those plugins and calls webhooks.
func testRecommendedPlugins(t *testing.T, e *env) {
	t.Run("--enable-admission-plugins with the recommended set", func(t *testing.T) {
		chains := e.main.Chains(t)
		loaded := sets.New(chains.Mutating...).Insert(chains.Validating...)
		if missing := sets.New(recommendedPlugins...).Difference(loaded); missing.Len() > 0 {
			t.Errorf("the server did not load %v; chains: %+v", sets.List(missing), chains)
		}
		wantWebhooksServe(t, newCase(e.main, "recommended"))
	})
	t.Run("the deprecated --admission-control form", func(t *testing.T) {
		log, err := os.ReadFile(e.configured.LogFile)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), "Flag --admission-control has been deprecated") {
			t.Errorf("%s does not report --admission-control as deprecated: was the flag parsed?", e.configured.LogFile)
		}
		chains := e.configured.Chains(t)
		loaded := sets.New(chains.Mutating...).Insert(chains.Validating...)
		if !loaded.Equal(sets.New(recommendedPlugins...)) {
			t.Errorf("--admission-control=%s loaded %v, want exactly those plugins", strings.Join(recommendedPlugins, ","), sets.List(loaded))
		}
		wantWebhooksServe(t, newCase(e.configured, "deprecated"))
	})
}

// wantWebhooksServe fails unless a mutating and a validating webhook both act on a request.
func wantWebhooksServe(t *testing.T, k *suiteCase) {
	t.Helper()
	ns := k.namespace(t, nil)
	k.c.hooks.handle(k.path("mutating"), func(c *call) *admissionv1.AdmissionResponse {
		return patched(setLabel(c.objectMeta(), mutatedLabel, "yes"))
	})
	k.c.hooks.handle(k.path("validating"), func(c *call) *admissionv1.AdmissionResponse {
		if c.objectMeta().Labels[mutatedLabel] != "yes" {
			return denied("validating webhook called before the mutating one")
		}
		return nil
	})
	k.c.createMutating(t, mutatingConfig(k.configName("m"),
		mutatingHook(k.hookName("mutating"), k.c.hooks.clientConfig(k.path("mutating")), k.selector(nil), configMapRule(opCreate))))
	k.c.createValidating(t, validatingConfig(k.configName("v"),
		validatingHook(k.hookName("validating"), k.c.hooks.clientConfig(k.path("validating")), k.selector(nil), configMapRule(opCreate))))
	created := k.mustCreateConfigMap(t, k.configMap(ns, "served", nil))
	if created.Labels[mutatedLabel] != "yes" {
		t.Errorf("the mutating webhook's patch is missing: labels %v", created.Labels)
	}
	if n := len(callsFor(k.c.hooks, k.path("validating"), "served")); n != 1 {
		t.Errorf("the validating webhook was called %d times, want once", n)
	}
}
