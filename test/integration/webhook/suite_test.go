// Package webhook is the conformance suite for admission webhook dispatch: every behaviour
// the Kubernetes "Dynamic Admission Control" documentation describes, proven against
// Portcullis's kube-apiserver and a real etcd, with HTTPS webhook servers written here that
// have their own CA and serve on 127.0.0.1 only. docs/webhooks.md maps each behaviour to its
// subtest.
package webhook

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/portcullis-k8s/portcullis/internal/pki"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// recommendedPlugins is the admission plugin set the Kubernetes documentation recommends
// ("What does each admission controller do?"), in the documentation's order.
var recommendedPlugins = []string{
	"NamespaceLifecycle", "LimitRanger", "ServiceAccount", "DefaultStorageClass",
	"DefaultTolerationSeconds", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "ResourceQuota",
}

// The token and client identity the configured server presents to the webhooks that its
// admission configuration's kubeconfig names.
const (
	webhookToken      = "portcullis-webhook-suite-token"
	webhookClientUser = "kube-apiserver-webhook-client"
)

// env is what every case shares: one etcd, the servers, and the webhook servers.
type env struct {
	dir string
	// ca signs every webhook server's certificate and the apiserver's webhook client
	// certificate; otherCA signs the certificate no configuration trusts.
	ca, otherCA *pki.CA
	// hooks is the webhook server most cases register their handlers on.
	hooks *webhookServer
	// wrongCA serves with a certificate of otherCA.
	wrongCA *webhookServer
	// certAuth requires a client certificate of ca, and the configured server's kubeconfig
	// gives it one; certAuthUnlisted requires one too, but the kubeconfig does not name it.
	certAuth, certAuthUnlisted *webhookServer
	// tokenAuth is given webhookToken by the configured server's kubeconfig;
	// tokenAuthUnlisted is not named there, so it receives no token.
	tokenAuth, tokenAuthUnlisted *webhookServer

	// main runs with the documented recommended plugin set in --enable-admission-plugins;
	// most cases run on it.
	main *cluster
	// configured runs with the deprecated --admission-control form of the same set, an audit
	// log, an admission configuration file whose kubeconfig authenticates the apiserver to
	// webhooks, and --enable-aggregator-routing=true.
	configured *cluster
}

// cluster is one kube-apiserver under test.
type cluster struct {
	*framework.APIServer
	name    string
	dynamic dynamic.Interface
	// hooks serves the probes that tell when the server has loaded a configuration.
	hooks *webhookServer
	// probeNS holds the probes' dry-run ConfigMaps; no case's webhook selects it.
	probeNS string
	// auditLog is the server's audit log, if it has one.
	auditLog string
}

// TestWebhooks starts one etcd, two servers and the webhook servers, then runs one subtest
// per documented behaviour. Cases run one after another; each deletes its configurations
// when it ends.
func TestWebhooks(t *testing.T) {
	bins := framework.FindBinaries(t)
	e := newEnv(t)
	etcd := framework.StartEtcd(t, bins.Etcd)

	e.main = startCluster(t, e, "main", bins.APIServer, etcd,
		"--enable-admission-plugins="+strings.Join(recommendedPlugins, ","))

	configuredDir := filepath.Join(e.dir, "configured")
	auditLog := filepath.Join(configuredDir, "audit.log")
	e.configured = startCluster(t, e, "configured", bins.APIServer, etcd,
		"--admission-control="+strings.Join(recommendedPlugins, ","),
		"--admission-control-config-file="+writeAdmissionConfig(t, e, configuredDir),
		"--audit-policy-file="+writeAuditPolicy(t, configuredDir),
		"--audit-log-path="+auditLog,
		"--enable-aggregator-routing=true")
	e.configured.auditLog = auditLog

	t.Run("serial mutation", func(t *testing.T) { testSerialMutation(t, e) })
	t.Run("parallel validation", func(t *testing.T) { testParallelValidation(t, e) })
	t.Run("rules", func(t *testing.T) { testRules(t, e) })
	t.Run("selectors and conditions", func(t *testing.T) { testSelectorsAndConditions(t, e) })
	t.Run("matchPolicy", func(t *testing.T) { testMatchPolicy(t, e) })
	t.Run("responses", func(t *testing.T) { testResponses(t, e) })
	t.Run("failure handling", func(t *testing.T) { testFailureHandling(t, e) })
	t.Run("versions", func(t *testing.T) { testVersions(t, e) })
	t.Run("dryRun and sideEffects", func(t *testing.T) { testDryRunAndSideEffects(t, e) })
	t.Run("reinvocationPolicy IfNeeded", func(t *testing.T) { testReinvocation(t, e) })
	t.Run("clientConfig", func(t *testing.T) { testClientConfig(t, e) })
	t.Run("authenticating the apiserver to webhooks", func(t *testing.T) { testAuthentication(t, e) })
	t.Run("recommended plugin set", func(t *testing.T) { testRecommendedPlugins(t, e) })
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{dir: dir}
	var err error
	if e.ca, err = pki.LoadOrCreateCA(dir, "webhook-ca"); err != nil {
		t.Fatal(err)
	}
	if e.otherCA, err = pki.LoadOrCreateCA(dir, "untrusted-ca"); err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(e.ca.Cert)
	e.hooks = startWebhookServer(t, dir, serverOptions{ca: e.ca, certName: "webhook"})
	e.wrongCA = startWebhookServer(t, dir, serverOptions{ca: e.otherCA, certName: "untrusted-webhook"})
	e.certAuth = startWebhookServer(t, dir, serverOptions{ca: e.ca, certName: "webhook", clientCAs: clientCAs})
	e.certAuthUnlisted = startWebhookServer(t, dir, serverOptions{ca: e.ca, certName: "webhook", clientCAs: clientCAs})
	e.tokenAuth = startWebhookServer(t, dir, serverOptions{ca: e.ca, certName: "webhook"})
	e.tokenAuthUnlisted = startWebhookServer(t, dir, serverOptions{ca: e.ca, certName: "webhook"})
	return e
}

// startCluster starts a kube-apiserver under its own etcd prefix, and the namespace its
// configuration probes go to.
func startCluster(t *testing.T, e *env, name, binary string, etcd *framework.Etcd, flags ...string) *cluster {
	t.Helper()
	server := framework.StartAPIServer(t, binary, etcd, append([]string{"--etcd-prefix=/" + name}, flags...)...)
	dyn, err := dynamic.NewForConfig(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{APIServer: server, name: name, dynamic: dyn, hooks: e.hooks}
	ns, err := server.Client.CoreV1().Namespaces().Create(requestContext(t), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "probes-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the probe namespace on %s: %v", name, err)
	}
	c.probeNS = ns.Name
	return c
}

// writeAdmissionConfig writes the configured server's admission configuration: both webhook
// plugins read a kubeconfig that gives the certAuth server a client certificate and the
// tokenAuth server a bearer token, each named by its host:port.
func writeAdmissionConfig(t *testing.T, e *env, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	client, err := e.ca.ClientCert(dir, "webhook-client", webhookClientUser)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "webhook-kubeconfig.yaml")
	writeFile(t, kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
users:
- name: %q
  user:
    client-certificate: %q
    client-key: %q
- name: %q
  user:
    token: %q
`, hostPort(e.certAuth), client.CertFile, client.KeyFile, hostPort(e.tokenAuth), webhookToken))

	config := filepath.Join(dir, "admission-config.yaml")
	writeFile(t, config, fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]q
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]q
`, kubeconfig))
	return config
}

// writeAuditPolicy logs ConfigMap requests at Metadata, the level that carries admission
// webhooks' audit annotations, and nothing else.
func writeAuditPolicy(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "audit-policy.yaml")
	writeFile(t, path, `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: ""
    resources: ["configmaps"]
- level: None
`)
	return path
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// hostPort is the host:port a server's URL names, as the admission kubeconfig keys users.
func hostPort(s *webhookServer) string { return strings.TrimPrefix(s.URL, "https://") }

// createValidating creates cfg with a probe webhook added, deletes it when the test ends, and
// returns once the server calls the probe. The server loads a configuration as a whole, so
// once it calls the probe, every webhook of cfg is in force.
func (c *cluster) createValidating(t *testing.T, cfg *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	path := c.probePath(cfg.Name)
	probe := validatingHook("probe."+cfg.Name+".webhook.test", c.hooks.clientConfig(path), nil, configMapRule(opCreate))
	probe.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{probeLabel: cfg.Name}}
	cfg = cfg.DeepCopy()
	cfg.Webhooks = append(cfg.Webhooks, probe)
	c.hooks.handle(path, func(*call) *admissionv1.AdmissionResponse { return nil })
	client := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := client.Create(requestContext(t), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ValidatingWebhookConfiguration %s: %v", cfg.Name, err)
	}
	deleteAtEnd(t, "ValidatingWebhookConfiguration "+cfg.Name, func(ctx context.Context) error {
		return client.Delete(ctx, cfg.Name, metav1.DeleteOptions{})
	})
	c.waitForProbe(t, cfg.Name, path)
}

// createMutating is createValidating for a MutatingWebhookConfiguration.
func (c *cluster) createMutating(t *testing.T, cfg *admissionregistrationv1.MutatingWebhookConfiguration) {
	t.Helper()
	path := c.probePath(cfg.Name)
	probe := mutatingHook("probe."+cfg.Name+".webhook.test", c.hooks.clientConfig(path), nil, configMapRule(opCreate))
	probe.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{probeLabel: cfg.Name}}
	cfg = cfg.DeepCopy()
	cfg.Webhooks = append(cfg.Webhooks, probe)
	c.hooks.handle(path, func(*call) *admissionv1.AdmissionResponse { return nil })
	client := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := client.Create(requestContext(t), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating MutatingWebhookConfiguration %s: %v", cfg.Name, err)
	}
	deleteAtEnd(t, "MutatingWebhookConfiguration "+cfg.Name, func(ctx context.Context) error {
		return client.Delete(ctx, cfg.Name, metav1.DeleteOptions{})
	})
	c.waitForProbe(t, cfg.Name, path)
}

func (c *cluster) probePath(configName string) string { return "/probe/" + c.name + "/" + configName }

// waitForProbe sends dry-run ConfigMaps labelled for configName into the probe namespace
// until the probe webhook at path has been called.
func (c *cluster) waitForProbe(t *testing.T, configName, path string) {
	t.Helper()
	eventually(t, pollTimeout, "the server to call the probe of configuration "+configName, func(ctx context.Context) (bool, error) {
		if len(c.hooks.callsTo(path)) > 0 {
			return true, nil
		}
		_, err := c.Client.CoreV1().ConfigMaps(c.probeNS).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Labels: map[string]string{probeLabel: configName}},
		}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return len(c.hooks.callsTo(path)) > 0, nil
	})
}
