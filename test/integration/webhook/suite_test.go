// Package webhook is the conformance suite for admission webhook dispatch: every behaviour
// the Kubernetes "Dynamic Admission Control" documentation describes, proven against
// Portcullis's kube-apiserver and a real etcd, with HTTPS webhook servers written here that
// have their own CA and serve on 127.0.0.1 only. docs/webhooks.md maps each behaviour to its
// subtest. The suite runs twice: under upstream's configuration of the webhook plugins, and
// with Portcullis's circuit breakers and time budget turned on. TestPortcullisDispatch
// (portcullis_dispatch_test.go) proves what the breakers, the budget, early exit and the
// once-per-change serialization add.
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
	// etcdPrefix is prepended to each server's name to make its etcd prefix.
	etcdPrefix string
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

	// main runs with the documented recommended plugin set in --enable-admission-plugins
	// (and, under a variant with dispatch settings, an admission configuration file giving
	// both webhook plugins those settings); most cases run on it.
	main *cluster
	// configured runs with the deprecated --admission-control form of the same set, an audit
	// log, an admission configuration file whose kubeconfig authenticates the apiserver to
	// webhooks (in upstream's kind, or in Portcullis's with the variant's dispatch
	// settings), and --enable-aggregator-routing=true.
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

// suiteVariant is one configuration of the webhook plugins the whole suite runs under.
type suiteVariant struct {
	name string
	// id prefixes the servers' etcd prefixes, so the variants share one etcd and nothing else.
	id string
	// dispatch, when set, are the settings of the Portcullis entry's webhookDispatch
	// (circuitBreaker, timeBudget) that both servers' webhook plugins run with; unset, the
	// servers run upstream's configuration as stock would.
	dispatch string
}

// suiteDispatch are realistic settings: the documented defaults' threshold and margin, with
// short backoffs so that a breaker a case opened would be probed, and closed, at once
// (dispatchEntries adds the validating plugin's early exit).
const suiteDispatch = `circuitBreaker:
  failureThreshold: 5
  initialBackoff: 100ms
  maxBackoff: 1s
timeBudget:
  deadlineMargin: 2s
`

var suiteVariants = []suiteVariant{
	{name: "upstream configuration"},
	{name: "breaker and budget", id: "breaker-budget", dispatch: suiteDispatch},
}

// TestWebhooks starts one etcd, then runs the whole suite once per variant: every
// documented behaviour must hold under upstream's configuration of the webhook plugins and
// under Portcullis's with circuit breakers and the time budget on.
func TestWebhooks(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	for _, v := range suiteVariants {
		t.Run(v.name, func(t *testing.T) { runSuite(t, bins, etcd, v) })
	}
}

// runSuite starts the variant's two servers and the webhook servers, then runs one subtest
// per documented behaviour. Cases run one after another; each deletes its configurations
// when it ends. The servers stop when the variant ends.
func runSuite(t *testing.T, bins framework.Binaries, etcd *framework.Etcd, v suiteVariant) {
	e := newEnv(t)
	if v.id != "" {
		e.etcdPrefix = v.id + "-"
	}

	mainFlags := []string{"--enable-admission-plugins=" + strings.Join(recommendedPlugins, ",")}
	if v.dispatch != "" {
		mainFlags = append(mainFlags, "--admission-control-config-file="+
			writeAdmissionConfig(t, filepath.Join(e.dir, "main"), dispatchEntries("", v.dispatch)))
	}
	e.main = startCluster(t, e, "main", bins.APIServer, etcd, mainFlags...)

	configuredDir := filepath.Join(e.dir, "configured")
	kubeconfig := writeWebhookKubeconfig(t, e, configuredDir)
	entry := upstreamEntries(kubeconfig)
	if v.dispatch != "" {
		entry = dispatchEntries(kubeconfig, v.dispatch)
	}
	auditLog := filepath.Join(configuredDir, "audit.log")
	e.configured = startCluster(t, e, "configured", bins.APIServer, etcd,
		"--admission-control="+strings.Join(recommendedPlugins, ","),
		"--admission-control-config-file="+writeAdmissionConfig(t, configuredDir, entry),
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
	t.Run("the variant's dispatch settings are in force", func(t *testing.T) {
		// The breakers record their state once consulted, and are consulted only when on.
		// Under upstream's configuration the plugins are upstream's own, and our dispatch's
		// metrics are not even registered.
		for _, c := range []*cluster{e.main, e.configured} {
			metrics := c.metrics(t)
			samples := metricSamples(metrics, metricBreakerState, nil)
			switch {
			case v.dispatch != "" && len(samples) == 0:
				t.Errorf("%s: no circuit breaker was consulted: the dispatch settings are not in force", c.name)
			case v.dispatch == "" && strings.Contains(metrics, "portcullis_admission_webhook_"):
				t.Errorf("%s: our dispatch's metrics are registered under upstream's configuration", c.name)
			}
		}
	})
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

// startCluster starts a kube-apiserver under its own etcd prefix (e.etcdPrefix and name),
// and the namespace its configuration probes go to.
func startCluster(t *testing.T, e *env, name, binary string, etcd *framework.Etcd, flags ...string) *cluster {
	t.Helper()
	server := framework.StartAPIServer(t, binary, etcd, append([]string{"--etcd-prefix=/" + e.etcdPrefix + name}, flags...)...)
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

// writeWebhookKubeconfig writes, into dir, the kubeconfig the configured server's webhook
// plugins read: it gives the certAuth server a client certificate and the tokenAuth server a
// bearer token, each named by its host:port.
func writeWebhookKubeconfig(t *testing.T, e *env, dir string) string {
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
	return kubeconfig
}

// entries are the admission config file's entries of the two webhook plugins, and of the
// Portcullis entry when set (YAML, unindented).
type entries struct{ validating, mutating, portcullis string }

// upstreamEntries are both webhook plugins' configuration in upstream's kind, reading
// kubeconfig; none without one (up to 1.36, upstream's loader refuses an entry whose
// kubeConfigFile is not an absolute path, an empty one included).
func upstreamEntries(kubeconfig string) entries {
	if kubeconfig == "" {
		return entries{}
	}
	entry := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: WebhookAdmissionConfiguration
kubeConfigFile: %q
`, kubeconfig)
	return entries{validating: entry, mutating: entry}
}

// dispatchEntries are both webhook plugins' entries in upstream's kind, reading kubeconfig,
// and the Portcullis entry turning our dispatch on for both with settings (YAML fields:
// circuitBreaker, timeBudget); the validating plugin's has its early exit on too.
func dispatchEntries(kubeconfig, settings string) entries {
	e := upstreamEntries(kubeconfig)
	indent := func(s string) string {
		return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
	}
	e.portcullis = "apiVersion: admission.portcullis.io/v1alpha1\nkind: PortcullisConfiguration\nwebhookDispatch:\n" +
		"  mutating:\n" + indent(settings) + "  validating:\n" + indent(settings+"earlyExit: true\n")
	return e
}

func portcullisEntry(config string, indent func(string) string) string {
	if config == "" {
		return ""
	}
	return "- name: Portcullis\n  configuration:\n" + indent(config)
}

// writeAdmissionConfig writes, into dir, an admission configuration file with the two
// webhook plugins' entries.
func writeAdmissionConfig(t *testing.T, dir string, e entries) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	indent := func(entry string) string {
		return "    " + strings.ReplaceAll(strings.TrimRight(entry, "\n"), "\n", "\n    ") + "\n"
	}
	entry := func(name, config string) string {
		if config == "" {
			return ""
		}
		return "- name: " + name + "\n  configuration:\n" + indent(config)
	}
	config := filepath.Join(dir, "admission-config.yaml")
	writeFile(t, config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"+
		entry("ValidatingAdmissionWebhook", e.validating)+entry("MutatingAdmissionWebhook", e.mutating)+portcullisEntry(e.portcullis, indent))
	return config
}

// writeAuditPolicy logs requests for ConfigMaps, and the other core resources named, at
// Request, the level that carries every admission webhook audit annotation (mutating
// webhooks' patches are recorded from Request on), and nothing else.
func writeAuditPolicy(t *testing.T, dir string, resources ...string) string {
	t.Helper()
	path := filepath.Join(dir, "audit-policy.yaml")
	writeFile(t, path, fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  resources:
  - group: ""
    resources: [%s]
- level: None
`, strings.Join(append([]string{"configmaps"}, resources...), ", ")))
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
