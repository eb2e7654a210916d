package apiserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// guardrailsConfig is an admission configuration: the guard with its defaults (every check
// Warn) or every check Deny, and SecurityContextDeny and upstream's DenyServiceExternalIPs
// in Warn and Audit.
func guardrailsConfig(t *testing.T, deny bool) string {
	t.Helper()
	guard := ""
	if deny {
		guard = `
- name: WebhookConfigurationGuard
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: WebhookConfigurationGuardConfiguration
    checks: {systemNamespaces: Deny, reviewResources: Deny, selfIntercept: Deny, timeout: Deny, catchAll: Deny, chain: Deny}`
	}
	path := filepath.Join(t.TempDir(), "admission-config.yaml")
	if err := os.WriteFile(path, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:`+guard+`
- name: Portcullis
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: PortcullisConfiguration
    enforcementModes:
    - name: SecurityContextDeny
      modes: [Warn, Audit]
    - name: DenyServiceExternalIPs
      modes: [Warn, Audit]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func auditPolicy(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit-policy.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fragileWebhook is the good-practices page's cautionary tale: failurePolicy Fail over every
// namespace's pods, served from its own namespace, with a 30 s timeout.
func fragileWebhook() admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: "pods.fragile.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: "webhook-system", Name: "webhook", Path: ptr("/validate")}},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
		FailurePolicy:           ptr(admissionregistrationv1.Fail),
		TimeoutSeconds:          ptr(int32(30)),
		SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

// wellBehavedWebhook follows the practices: selectors that exclude kube-system and its own
// namespace, a short timeout, named resources.
func wellBehavedWebhook() admissionregistrationv1.ValidatingWebhook {
	w := fragileWebhook()
	w.Name = "pods.careful.example.com"
	w.TimeoutSeconds = ptr(int32(3))
	w.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "kube-node-lease", "webhook-system"}}}}
	return w
}

func TestGuardrails(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	plugins := "--enable-admission-plugins=WebhookConfigurationGuard,SecurityContextDeny,DenyServiceExternalIPs"
	warnServer := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/guard-warn", plugins,
		"--admission-control-config-file="+guardrailsConfig(t, false), "--audit-policy-file="+auditPolicy(t), "--audit-log-path="+auditLog)
	denyServer := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/guard-deny", plugins,
		"--admission-control-config-file="+guardrailsConfig(t, true))
	ctx := context.Background()
	warnings := &framework.WarningRecorder{}
	config := rest.CopyConfig(warnServer.Config)
	config.WarningHandler = warnings
	client := kubernetes.NewForConfigOrDie(config)

	createValidating := func(t *testing.T, c kubernetes.Interface, name string, webhooks ...admissionregistrationv1.ValidatingWebhook) error {
		t.Helper()
		_, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: webhooks}, metav1.CreateOptions{})
		return err
	}

	t.Run("WebhookConfigurationGuard", func(t *testing.T) {
		// The configurations written here name no reachable webhook: remove them before the
		// requests of the next subtests would call them.
		defer func() {
			for _, name := range []string{"fragile", "tokenreviews", "careful"} {
				_ = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
			}
			_ = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, "chain", metav1.DeleteOptions{})
			// The dispatcher learns of deletions from an informer: wait until a pod create no
			// longer calls them (a dry run calls webhooks, and stores nothing).
			ns := namespace(t, warnServer.Client)
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := warnServer.Client.CoreV1().Pods(ns).Create(ctx, podWith(nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return err == nil, nil
			})
			if err != nil {
				t.Fatalf("the deleted webhooks are still called: %v", err)
			}
		}()
		t.Run("Warn: a fragile webhook is written, with the kube-system, own-namespace and timeout warnings", func(t *testing.T) {
			warnings.Take()
			if err := createValidating(t, client, "fragile", fragileWebhook()); err != nil {
				t.Fatalf("in Warn mode the write must succeed: %v", err)
			}
			got := strings.Join(warnings.Take(), "\n")
			for _, want := range []string{"pods.fragile.example.com", "kube-system", "webhook-system", "timeoutSeconds"} {
				if !strings.Contains(got, want) {
					t.Errorf("warnings do not mention %q:\n%s", want, got)
				}
			}
		})
		t.Run("Deny: the same webhook is refused naming every finding", func(t *testing.T) {
			err := createValidating(t, denyServer.Client, "fragile", fragileWebhook())
			wantForbidden(t, err, "kube-system")
			for _, want := range []string{"webhook-system", "timeoutSeconds"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not mention %q: %v", want, err)
				}
			}
		})
		t.Run("a webhook over TokenReviews is flagged", func(t *testing.T) {
			w := wellBehavedWebhook()
			w.Name = "tokenreviews.example.com"
			w.Rules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"authentication.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"tokenreviews"}}
			warnings.Take()
			if err := createValidating(t, client, "tokenreviews", w); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(warnings.Take(), "\n"); !strings.Contains(got, "tokenreviews") {
				t.Errorf("no warning about tokenreviews: %q", got)
			}
		})
		t.Run("four IfNeeded mutating webhooks of 10 s on one resource trip the chain check", func(t *testing.T) {
			var webhooks []admissionregistrationv1.MutatingWebhook
			for _, name := range []string{"a", "b", "c", "d"} {
				w := wellBehavedWebhook()
				webhooks = append(webhooks, admissionregistrationv1.MutatingWebhook{
					Name: name + ".chain.example.com", ClientConfig: w.ClientConfig, NamespaceSelector: w.NamespaceSelector,
					Rules: []admissionregistrationv1.RuleWithOperations{{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					}},
					FailurePolicy: ptr(admissionregistrationv1.Ignore), TimeoutSeconds: ptr(int32(10)),
					ReinvocationPolicy: ptr(admissionregistrationv1.IfNeededReinvocationPolicy),
					SideEffects:        w.SideEffects, AdmissionReviewVersions: w.AdmissionReviewVersions,
				})
			}
			warnings.Take()
			_, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: "chain"}, Webhooks: webhooks}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(warnings.Take(), "\n")
			for _, want := range []string{"configmaps", "a.chain.example.com", "d.chain.example.com"} {
				if !strings.Contains(got, want) {
					t.Errorf("the chain warning does not name %q:\n%s", want, got)
				}
			}
		})
		t.Run("preflight --webhooks reports the same findings of a live cluster", func(t *testing.T) {
			kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
			if err := controlplane.WriteKubeconfig(kubeconfig, controlplane.URL(warnServer.Port), warnServer.PKI.CA, warnServer.PKI.Admin); err != nil {
				t.Fatal(err)
			}
			out, code := run(t, bins.APIServer, "preflight", "--webhooks", "--kubeconfig", kubeconfig)
			if code != 0 || !strings.Contains(out, "[Warn]") || !strings.Contains(out, "pods.fragile.example.com") || !strings.Contains(out, "webhook-system") {
				t.Errorf("at the default levels: exit %d, want 0 and the fragile webhook's findings:\n%s", code, out)
			}
			// The node's command line puts the checks at Deny: the swap would refuse them.
			node := append(controlplane.APIServerFlags(warnServer.PKI, t.TempDir(), etcd.ClientURL, warnServer.Port), plugins,
				"--admission-control-config-file="+guardrailsConfig(t, true))
			out, code = run(t, bins.APIServer, append([]string{"preflight", "--webhooks", "--kubeconfig", kubeconfig, "--"}, node...)...)
			if code != 1 || !strings.Contains(out, "[Deny]") || !strings.Contains(out, "pods.fragile.example.com") {
				t.Errorf("at Deny levels: exit %d, want 1 naming the Deny findings:\n%s", code, out)
			}
		})
		t.Run("a configuration that follows the practices gets no finding", func(t *testing.T) {
			warnings.Take()
			if err := createValidating(t, client, "careful", wellBehavedWebhook()); err != nil {
				t.Fatal(err)
			}
			if got := warnings.Take(); len(got) != 0 {
				t.Errorf("want no warning, got %q", got)
			}
			if err := createValidating(t, denyServer.Client, "careful", wellBehavedWebhook()); err != nil {
				t.Errorf("Deny mode refused a configuration that follows the practices: %v", err)
			}
		})
	})

	t.Run("enforcement modes Warn and Audit", func(t *testing.T) {
		ns := namespace(t, warnServer.Client)
		for _, tc := range []struct {
			plugin string
			create func() error
		}{
			{"SecurityContextDeny", func() error {
				pod := podWith(func(p *corev1.Pod) {
					p.Name = "root"
					p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(0))}
				})
				_, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
				return err
			}},
			{"DenyServiceExternalIPs", func() error {
				svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "external"}, Spec: corev1.ServiceSpec{
					Ports: []corev1.ServicePort{{Port: 80}}, ExternalIPs: []string{"192.0.2.10"}}}
				_, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
				return err
			}},
		} {
			t.Run(tc.plugin, func(t *testing.T) {
				warnings.Take()
				if err := tc.create(); err != nil {
					t.Fatalf("in Warn and Audit the request must be admitted: %v", err)
				}
				if got := strings.Join(warnings.Take(), "\n"); !strings.Contains(got, tc.plugin) {
					t.Errorf("the client got no warning from %s: %q", tc.plugin, got)
				}
				key := strings.ToLower(tc.plugin) + ".admission.portcullis.io/would-deny"
				framework.WaitForFileContaining(t, auditLog, key)
			})
		}
	})
}
