package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	settingsv1alpha1 "github.com/portcullis-k8s/api/settings/v1alpha1"
	"github.com/portcullis-k8s/portcullis/internal/balancer"
	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// rollbackAdmissionConfig is an admission configuration a careful operator writes for
// Portcullis: our webhook dispatch (with a webhook in Warn, a shadow and the idempotency
// probe), the admission trace and PodSecurityPolicy's API served through the Portcullis
// entry, upstream's webhook entries in upstream's kind. Stock never reads the entry: its
// webhooks all enforce again, and nothing is traced.
const rollbackAdmissionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: KUBECONFIG
- name: Portcullis
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: PortcullisConfiguration
    servedAPIs: [policy/v1beta1]
    webhookDispatch:
      validating:
        circuitBreaker: {}
        timeBudget: {}
        earlyExit: true
        enforcementModes: [{configuration: policy, webhook: deny.example.com, modes: [Warn]}]
      mutating:
        circuitBreaker: {}
        enforcementModes: [{configuration: inject, webhook: sidecar.example.com, modes: [Audit]}]
        idempotencyProbe: {oneIn: 100}
    admissionTrace: {onRequest: true, audit: true}
`

// earlierReleasesAdmissionConfig holds the forms earlier releases documented: the
// EnforcementModes entry, and our dispatch kind in a webhook plugin's entry.
const earlierReleasesAdmissionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EnforcementModes
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: EnforcementConfiguration
    plugins:
    - name: SecurityContextDeny
      modes: [Audit]
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: WebhookDispatchConfiguration
    kubeConfigFile: KUBECONFIG
    circuitBreaker: {}
    earlyExit: true
`

// withWebhookKubeconfig is an admission configuration of this file with KUBECONFIG, the
// webhook entries' kubeConfigFile (Kubernetes 1.35 requires one), replaced by an empty
// kubeconfig's path.
func withWebhookKubeconfig(t *testing.T, config string) string {
	t.Helper()
	return strings.ReplaceAll(config, "KUBECONFIG", writeTemp(t, "webhooks.kubeconfig", "apiVersion: v1\nkind: Config\n"))
}

// rollbackPolicy is a PodSecurityPolicy ours stores and stock cannot read.
const rollbackPolicy = `apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata:
  name: rollback-restricted
spec:
  privileged: false
  seLinux: {rule: RunAsAny}
  runAsUser: {rule: MustRunAsNonRoot}
  supplementalGroups: {rule: RunAsAny}
  fsGroup: {rule: RunAsAny}
  volumes: ['*']
`

// TestRollback proves that rollback is swapping the binary back: stock kube-apiserver, built
// from the same module graph, starts with every admission config file the project ships or
// writes and with each documented setup's flags less our plugin names; it starts on the etcd
// prefix ours wrote and serves what it can of it, and ours starts again with everything
// intact; and a pair of one of each behind the soak's balancer shows what a rolling swap
// looks like to clients.
func TestRollback(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	root := framework.RepoRoot(t)

	t.Run("stock starts with every documented setup less our plugin names", func(t *testing.T) {
		deployConfig := readFile(t, filepath.Join(root, kitAdmission))
		kubeadmFlags := []string{"--enable-admission-plugins=" + deployedPlugins(t)}
		systemdEnv := environmentFile(t, filepath.Join(root, "build/deploy/systemd/kube-apiserver.env"))
		setups := []struct {
			name   string
			config string
			flags  []string
		}{
			{"kubeadm static pod (build/deploy/static-pod)", deployConfig, kubeadmFlags},
			{"systemd unit (build/deploy/systemd)", deployConfig, []string{"--enable-admission-plugins=" + systemdEnv["ENABLE_ADMISSION_PLUGINS"]}},
			{"make run", controlplane.AdmissionConfig(true, ""), []string{"--enable-admission-plugins=" + strings.Join(ourPluginNames(), ",")}},
			{"make run with a Prometheus", controlplane.AdmissionConfig(true, "http://127.0.0.1:9090"), []string{"--enable-admission-plugins=" + strings.Join(ourPluginNames(), ",")}},
			{"the soak", controlplane.AdmissionConfig(false, ""), []string{"--enable-admission-plugins=" + strings.Join(ourPluginNames(), ",")}},
			{"PodSecurityPolicy, API first (docs/plugins/podsecuritypolicy.md)", withWebhookKubeconfig(t, rollbackAdmissionConfig), []string{"--enable-admission-plugins=NodeRestriction,PodSecurityPolicy"}},
			// Stock registers policy/v1beta1 and serves nothing there (asserted below).
			{"PodSecurityPolicy served by --runtime-config, as earlier releases had it", withWebhookKubeconfig(t, rollbackAdmissionConfig), []string{"--enable-admission-plugins=NodeRestriction,PodSecurityPolicy", "--runtime-config=policy/v1beta1=true"}},
		}
		for i, setup := range setups {
			t.Run(setup.name, func(t *testing.T) {
				config := writeTemp(t, "admission-config.yaml", setup.config)
				flags := append(withoutOurPluginNames(setup.flags), "--admission-control-config-file="+config, "--etcd-prefix=/rollback-setup-"+string(rune('a'+i)))
				// StartAPIServer fails the test unless the server comes up ready.
				stock := framework.StartAPIServer(t, bins.StockAPIServer, etcd, flags...)
				if chains := stock.Chains(t); !slices.Contains(chains.Validating, "ValidatingAdmissionWebhook") {
					t.Errorf("stock's validating chain lacks its webhooks: %v", chains.Validating)
				}
				if resources, err := stock.Client.Discovery().ServerResourcesForGroupVersion("policy/v1beta1"); err == nil {
					t.Errorf("stock serves policy/v1beta1: %v", resources.APIResources)
				}
			})
		}
	})

	t.Run("ours reads earlier releases' forms, warning of each", func(t *testing.T) {
		config := writeTemp(t, "admission-config.yaml", withWebhookKubeconfig(t, earlierReleasesAdmissionConfig))
		ours := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/rollback-earlier", "--admission-control-config-file="+config,
			"--enable-admission-plugins=SecurityContextDeny", "--runtime-config=policy/v1beta1=true")
		if _, err := ours.Client.Discovery().ServerResourcesForGroupVersion("policy/v1beta1"); err != nil {
			t.Errorf("--runtime-config=policy/v1beta1 no longer serves PodSecurityPolicy: %v", err)
		}
		log := readFile(t, ours.LogFile)
		for _, want := range []string{
			"list policy/v1beta1 in the admission config file's Portcullis entry, servedAPIs, instead",
			"plugins[0] (EnforcementModes): the EnforcementModes entry is replaced by the Portcullis entry's enforcementModes",
			"plugins[1] (ValidatingAdmissionWebhook): WebhookDispatchConfiguration in ValidatingAdmissionWebhook's entry stops a stock kube-apiserver from starting",
		} {
			if !strings.Contains(log, want) {
				t.Errorf("the server's log does not warn %q", want)
			}
		}
		if chains := ours.Chains(t); !slices.Contains(chains.Validating, "SecurityContextDeny") {
			t.Errorf("SecurityContextDeny does not run: %v", chains.Validating)
		}
		ns := namespace(t, ours.Client)
		root := frontendPod("root", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(0))}
		})
		if _, err := ours.Client.CoreV1().Pods(ns).Create(context.Background(), root, metav1.CreateOptions{}); err != nil {
			t.Errorf("SecurityContextDeny in Audit mode (the EnforcementModes entry) refused: %v", err)
		}
	})

	t.Run("stock on the etcd prefix ours wrote, then ours again", func(t *testing.T) {
		testDataLeftBehind(t, bins, etcd)
	})

	t.Run("a mixed pair behind a balancer, as during a rolling swap", func(t *testing.T) {
		testMixedPair(t, bins, etcd)
	})
}

// testDataLeftBehind: ours writes a PodSecurityPolicy, a PodPreset and webhook
// configurations; stock, on the same prefix with the same files and our plugin names out of
// the flags, starts, serves the webhook configurations and the PodPreset unchanged, applies
// no preset, and serves no PodSecurityPolicy (it stays in etcd); ours, started again, serves
// everything as it was, and does not rewrite the PodPreset CRD.
func testDataLeftBehind(t *testing.T, bins framework.Binaries, etcd *framework.Etcd) {
	ctx := context.Background()
	const prefix = "/rollback-data"
	files := framework.WritePKI(t, t.TempDir())
	config := writeTemp(t, "admission-config.yaml", withWebhookKubeconfig(t, rollbackAdmissionConfig))
	oursFlags := []string{"--etcd-prefix=" + prefix, "--admission-control-config-file=" + config, "--enable-admission-plugins=NodeRestriction,PodPreset"}
	ours := framework.StartAPIServerWithPKI(t, bins.APIServer, etcd, files, oursFlags...)

	dyn := dynamic.NewForConfigOrDie(ours.Config)
	policy, err := dyn.Resource(pspResource).Create(ctx, fromYAML(t, rollbackPolicy), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("servedAPIs does not serve PodSecurityPolicy: %v", err)
	}
	ns := namespace(t, ours.Client)
	preset, err := dyn.Resource(settingsv1alpha1.Resource).Namespace(ns).Create(ctx, fromYAML(t, allowDatabase), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitForPreset(t, ours.Client, ns, "allow-database")
	crd, err := dyn.Resource(crdResource).Get(ctx, "podpresets.settings.k8s.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	validating, mutating := writeWebhookConfigurations(t, ours.Client)
	ours.Stop(t)

	stock := framework.StartAPIServerWithPKI(t, bins.StockAPIServer, etcd, files, withoutOurPluginNames(oursFlags)...)
	stockDyn := dynamic.NewForConfigOrDie(stock.Config)
	t.Run("stock serves the webhook configurations and the PodPreset as they were", func(t *testing.T) {
		checkUnchanged(t, "ValidatingWebhookConfiguration", &validating.ObjectMeta, func() (*metav1.ObjectMeta, error) {
			got, err := stock.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, validating.Name, metav1.GetOptions{})
			return objectMeta(got, err)
		})
		checkUnchanged(t, "MutatingWebhookConfiguration", &mutating.ObjectMeta, func() (*metav1.ObjectMeta, error) {
			got, err := stock.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, mutating.Name, metav1.GetOptions{})
			return objectMeta(got, err)
		})
		checkUnstructuredUnchanged(t, preset, stockDyn.Resource(settingsv1alpha1.Resource).Namespace(ns))
	})
	t.Run("stock applies no preset", func(t *testing.T) {
		pod, err := stock.Client.CoreV1().Pods(ns).Create(ctx, frontendPod("through-stock", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := pod.Annotations["podpreset.admission.kubernetes.io/podpreset-allow-database"]; ok || hasEnv(pod.Spec.Containers[0], "DB_PORT", "6379") {
			t.Errorf("stock applied the preset: %v", pod.Annotations)
		}
	})
	t.Run("stock serves no PodSecurityPolicy; the policy stays in etcd", func(t *testing.T) {
		if _, err := stock.Client.Discovery().ServerResourcesForGroupVersion("policy/v1beta1"); !apierrors.IsNotFound(err) {
			t.Errorf("stock's policy/v1beta1: want 404, got %v", err)
		}
		client, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.ClientURL}, DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		got, err := client.Get(ctx, prefix+"/podsecuritypolicies/"+policy.GetName())
		if err != nil || len(got.Kvs) != 1 {
			t.Fatalf("reading etcd: %v, %d keys", err, len(got.Kvs))
		}
	})
	stock.Stop(t)

	again := framework.StartAPIServerWithPKI(t, bins.APIServer, etcd, files, oursFlags...)
	againDyn := dynamic.NewForConfigOrDie(again.Config)
	t.Run("ours again: everything as it was", func(t *testing.T) {
		checkUnstructuredUnchanged(t, policy, againDyn.Resource(pspResource))
		checkUnstructuredUnchanged(t, preset, againDyn.Resource(settingsv1alpha1.Resource).Namespace(ns))
		checkUnstructuredUnchanged(t, crd, againDyn.Resource(crdResource))
		checkUnchanged(t, "ValidatingWebhookConfiguration", &validating.ObjectMeta, func() (*metav1.ObjectMeta, error) {
			got, err := again.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, validating.Name, metav1.GetOptions{})
			return objectMeta(got, err)
		})
		waitForPreset(t, again.Client, ns, "allow-database")
	})
}

// testMixedPair runs ours (PodPreset and SecurityContextDeny enabled) and stock (the same
// flags less our plugin names) on one etcd prefix behind the soak's balancer, which spreads
// connections round robin: what a cluster looks like halfway through a rolling swap, in
// either direction. Each request on a fresh connection is answered by one of the two: a
// pod is refused by ours and admitted by stock, gets its preset from ours only, and
// PodSecurityPolicy's API answers 404 from stock.
func testMixedPair(t *testing.T, bins framework.Binaries, etcd *framework.Etcd) {
	ctx := context.Background()
	files := framework.WritePKI(t, t.TempDir())
	config := writeTemp(t, "admission-config.yaml", withWebhookKubeconfig(t, rollbackAdmissionConfig))
	oursFlags := []string{"--etcd-prefix=/rollback-mixed", "--admission-control-config-file=" + config, "--enable-admission-plugins=NodeRestriction,PodPreset,SecurityContextDeny"}
	ours := framework.StartAPIServerWithPKI(t, bins.APIServer, etcd, files, oursFlags...)
	stock := framework.StartAPIServerWithPKI(t, bins.StockAPIServer, etcd, files, withoutOurPluginNames(oursFlags)...)
	lb, err := balancer.Start(net.JoinHostPort("127.0.0.1", strconv.Itoa(ours.Port)), net.JoinHostPort("127.0.0.1", strconv.Itoa(stock.Port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lb.Close() })

	ns := namespace(t, ours.Client)
	if _, err := dynamic.NewForConfigOrDie(ours.Config).Resource(settingsv1alpha1.Resource).Namespace(ns).Create(ctx, fromYAML(t, allowDatabase), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPreset(t, ours.Client, ns, "allow-database")

	// A fresh connection per request: the balancer picks a backend per connection.
	fresh := func() *rest.Config {
		c := rest.CopyConfig(ours.Config)
		c.Host = "https://" + lb.Addr()
		c.Dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
		return c
	}
	const requests = 6
	var refused, withPreset, withoutPreset, policyServed, policyNotFound int
	for i := range requests {
		client := kubernetes.NewForConfigOrDie(fresh())
		root := frontendPod("root-"+strconv.Itoa(i), func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(0))}
		})
		switch pod, err := client.CoreV1().Pods(ns).Create(ctx, root, metav1.CreateOptions{}); {
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "securityContext.runAsUser is forbidden"):
			refused++
		case err != nil:
			t.Fatalf("request %d: %v", i, err)
		case hasEnv(pod.Spec.Containers[0], "DB_PORT", "6379"):
			t.Errorf("request %d: a pod SecurityContextDeny refuses was admitted by a server applying presets", i)
		default:
			withoutPreset++
		}
		pod, err := kubernetes.NewForConfigOrDie(fresh()).CoreV1().Pods(ns).Create(ctx, frontendPod("plain-"+strconv.Itoa(i), nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if hasEnv(pod.Spec.Containers[0], "DB_PORT", "6379") {
			withPreset++
		}
		_, err = dynamic.NewForConfigOrDie(fresh()).Resource(pspResource).List(ctx, metav1.ListOptions{})
		switch {
		case err == nil:
			policyServed++
		case apierrors.IsNotFound(err):
			policyNotFound++
		default:
			t.Fatalf("request %d: listing PodSecurityPolicies: %v", i, err)
		}
	}
	t.Logf("through the balancer, %d requests of each kind: root pods refused %d, admitted without presets %d; plain pods with the preset %d; PodSecurityPolicy list answered %d, 404 %d",
		requests, refused, withoutPreset, withPreset, policyServed, policyNotFound)
	// Round robin over two servers: each kind of request reaches each server.
	for _, c := range []struct {
		what string
		n    int
	}{
		{"root pods refused (ours)", refused}, {"root pods admitted (stock)", withoutPreset},
		{"plain pods with the preset (ours)", withPreset}, {"plain pods without it (stock)", requests - withPreset},
		{"PodSecurityPolicy lists answered (ours)", policyServed}, {"PodSecurityPolicy lists answered 404 (stock)", policyNotFound},
	} {
		if c.n == 0 {
			t.Errorf("no request of %d was one of %s", requests, c.what)
		}
	}
}

func writeWebhookConfigurations(t *testing.T, client kubernetes.Interface) (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration) {
	t.Helper()
	ctx := context.Background()
	url := "https://127.0.0.1:1/never-called"
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	// A namespace label nothing has: the webhooks are stored and never called.
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"rollback.portcullis.io/never": "true"}}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	validating, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "rollback-validating"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "never.rollback.portcullis.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: rules, FailurePolicy: &ignore, SideEffects: &none, NamespaceSelector: selector, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mutating, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "rollback-mutating"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "never.rollback.portcullis.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: rules, FailurePolicy: &ignore, SideEffects: &none, NamespaceSelector: selector, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return validating, mutating
}

func objectMeta[T interface{ GetObjectMeta() metav1.Object }](obj T, err error) (*metav1.ObjectMeta, error) {
	if err != nil {
		return nil, err
	}
	m := obj.GetObjectMeta()
	return &metav1.ObjectMeta{Name: m.GetName(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion()}, nil
}

// checkUnchanged fails unless get returns the object want describes, same UID and resource
// version: stored once, never rewritten.
func checkUnchanged(t *testing.T, kind string, want *metav1.ObjectMeta, get func() (*metav1.ObjectMeta, error)) {
	t.Helper()
	got, err := get()
	switch {
	case err != nil:
		t.Errorf("%s %s: %v", kind, want.Name, err)
	case got.UID != want.UID || got.ResourceVersion != want.ResourceVersion:
		t.Errorf("%s %s: UID %s, resourceVersion %s; want %s, %s", kind, want.Name, got.UID, got.ResourceVersion, want.UID, want.ResourceVersion)
	}
}

func checkUnstructuredUnchanged(t *testing.T, want *unstructured.Unstructured, resource dynamic.ResourceInterface) {
	t.Helper()
	checkUnchanged(t, want.GetKind(), &metav1.ObjectMeta{Name: want.GetName(), UID: want.GetUID(), ResourceVersion: want.GetResourceVersion()}, func() (*metav1.ObjectMeta, error) {
		got, err := resource.Get(context.Background(), want.GetName(), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return &metav1.ObjectMeta{Name: got.GetName(), UID: got.GetUID(), ResourceVersion: got.GetResourceVersion()}, nil
	})
}

// withoutOurPluginNames is the documented rollback edit: our plugin names out of the
// admission flags (--flag=a,b form).
func withoutOurPluginNames(flags []string) []string {
	out := slices.Clone(flags)
	for i, f := range out {
		name, value, ok := strings.Cut(f, "=")
		if !ok || !slices.Contains([]string{"--enable-admission-plugins", "--disable-admission-plugins", "--admission-control"}, name) {
			continue
		}
		names := slices.DeleteFunc(strings.Split(value, ","), portcullisadmission.IsOurs)
		out[i] = name + "=" + strings.Join(names, ",")
	}
	return out
}

// environmentFile reads KEY=VALUE lines, as systemd's EnvironmentFile= does for these files.
func environmentFile(t *testing.T, path string) map[string]string {
	t.Helper()
	env := map[string]string{}
	scanner := bufio.NewScanner(bytes.NewReader(readFileBytes(t, path)))
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = strings.Trim(v, `"`)
		}
	}
	return env
}

func readFileBytes(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readFile(t *testing.T, path string) string { return string(readFileBytes(t, path)) }

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
