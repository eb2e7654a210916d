package webhook

// This file proves, against a real server, etcd and HTTPS webhooks, what an operator rolling
// out a webhook and reading admission gets:
//
//   - a validating webhook in Warn admits what it denies with a warning, in Audit with an
//     audit annotation, both counted; one not named is enforced;
//   - a mutating webhook in Audit (a shadow) is called, its patch recorded and not applied;
//   - the idempotency probe finds a webhook that changes its own output again, not one that
//     leaves it be, and `kube-apiserver preflight --webhooks` reports it;
//   - the admission trace of a dry-run pod create, through LimitRanger, ServiceAccount,
//     PodPreset, PodSecurityPolicy and two webhooks, step by step; a user who may not trace
//     gets none; the audit event of every request carries the same steps.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/pkg/admission/trace"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// rolloutID names the configurations and webhooks that the rollout server's admission
// configuration gives modes to: they are known before the server starts.
const rolloutID = "rollout"

// Users of the rollout server's token file besides chainToken's: viewer may create pods but
// not trace them; tracer may do both.
const (
	viewerToken = "portcullis-rollout-viewer-token"
	tracerToken = "portcullis-rollout-tracer-token"
)

// rolloutPlugins are the plugins the trace goes through, with the namespace checks and the
// quota around them.
var rolloutPlugins = []string{
	"NamespaceLifecycle", "LimitRanger", "ServiceAccount", "PodPreset", "PodSecurityPolicy",
	"MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "ResourceQuota",
}

// rolloutPortcullis is the rollout server's Portcullis entry: two validating webhooks in
// Warn and Audit, a mutating one in Audit (a shadow), every changing mutating call probed,
// and the trace on request and in audit.
func rolloutPortcullis(k *suiteCase) string {
	return fmt.Sprintf(`apiVersion: admission.portcullis.io/v1alpha1
kind: PortcullisConfiguration
webhookDispatch:
  mutating:
    enforcementModes:
    - {configuration: %[1]s, webhook: %[2]s, modes: [Audit]}
    - {configuration: %[7]s, webhook: %[8]s, modes: [Audit], maxWait: 500ms}
    idempotencyProbe: {oneIn: 1}
  validating:
    enforcementModes:
    - {configuration: %[3]s, webhook: %[4]s, modes: [Warn]}
    - {configuration: %[5]s, webhook: %[6]s, modes: [Audit]}
    - {configuration: `+docsExampleConfiguration+`, webhook: `+docsExampleWebhook+`, modes: [Warn, Audit]}
admissionTrace: {onRequest: true, audit: true}
`, k.configName("shadow"), k.hookName("shadow"), k.configName("warn"), k.hookName("deny-warn"), k.configName("audit"), k.hookName("deny-audit"),
		k.configName("slow-shadow"), k.hookName("slow-shadow"))
}

// startRolloutCluster starts the server the rollout cases run on: rolloutPlugins, the
// Portcullis entry above, an audit log of pods and ConfigMaps at Request, and the users of
// tokens.
func startRolloutCluster(t *testing.T, e *env, bins framework.Binaries, etcd *framework.Etcd, tokens string) *cluster {
	t.Helper()
	dir := filepath.Join(e.dir, "rollout")
	config := writeAdmissionConfig(t, dir, entries{portcullis: rolloutPortcullis(&suiteCase{id: rolloutID})})
	policy := writeAuditPolicy(t, dir, "pods")
	auditLog := filepath.Join(dir, "audit.log")
	c := startCluster(t, e, "rollout", bins.APIServer, etcd,
		"--enable-admission-plugins="+strings.Join(rolloutPlugins, ","),
		"--admission-control-config-file="+config,
		"--audit-policy-file="+policy, "--audit-log-path="+auditLog,
		"--token-auth-file="+tokens)
	c.auditLog = auditLog
	return c
}

// creationAnnotations are the annotations of the audit event of the creation of ns/name,
// once the audit log has it.
func (c *cluster) creationAnnotations(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	var annotations map[string]string
	eventually(t, pollTimeout, "the audit event of the creation of "+ns+"/"+name, func(context.Context) (bool, error) {
		event, err := findAuditEvent(c.auditLog, ns, name)
		if event != nil {
			annotations = event.Annotations
		}
		return event != nil, err
	})
	return annotations
}

// metricValue sums the samples of metric whose labels include labels.
func metricValue(text, metric string, labels map[string]string) float64 {
	total := 0.0
	for _, line := range metricSamples(text, metric, labels) {
		if i := strings.LastIndexByte(line, ' '); i >= 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				total += v
			}
		}
	}
	return total
}

const metricWouldDeny = "portcullis_admission_webhook_would_deny_total"

// waitForMetric polls the server's /metrics until the samples of metric with labels sum to
// more than floor, for at most pollTimeout, and reports whether they did.
func (c *cluster) waitForMetric(metric string, labels map[string]string, floor float64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		body, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		return err == nil && metricValue(string(body), metric, labels) > floor, nil
	}) == nil
}

// testWebhookModes: a ConfigMap every webhook denies or patches is admitted, because each is
// in a mode that does not enforce; what each would have done is in the warnings, the audit
// event and the metrics as its mode says. The same denial from a webhook with no mode
// refuses.
//
// No enforced webhook matches it in either phase (the enforced one selects other objects):
// softened webhooks are called off the request path, and the request waits for their
// verdicts (validating: at the end of the validating dispatch; the shadow: at the end of the
// chain), each within its timeoutSeconds, to record them.
func testWebhookModes(t *testing.T, e *env, c *cluster) {
	k := newCase(c, rolloutID)
	ns := k.namespace(t, nil)
	deny := func(*call) *admissionv1.AdmissionResponse { return denied("ConfigMaps need an owner label") }
	for _, name := range []string{"deny-warn", "deny-audit", "deny-enforced"} {
		e.hooks.handle(k.path(name), deny)
	}
	e.hooks.handle(k.path("shadow"), func(c *call) *admissionv1.AdmissionResponse {
		return patched(setLabel(c.objectMeta(), "shadowed", "yes"))
	})
	enforced := validatingHook(k.hookName("deny-enforced"), e.hooks.clientConfig(k.path("deny-enforced")), k.selector(nil), configMapRule(opCreate))
	enforced.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"enforce": "yes"}}
	for _, cfg := range []*admissionregistrationv1.ValidatingWebhookConfiguration{
		validatingConfig(k.configName("warn"), validatingHook(k.hookName("deny-warn"), e.hooks.clientConfig(k.path("deny-warn")), k.selector(nil), configMapRule(opCreate))),
		validatingConfig(k.configName("audit"), validatingHook(k.hookName("deny-audit"), e.hooks.clientConfig(k.path("deny-audit")), k.selector(nil), configMapRule(opCreate))),
		validatingConfig(k.configName("enforced"), enforced),
	} {
		c.createValidating(t, cfg)
	}
	c.createMutating(t, mutatingConfig(k.configName("shadow"), mutatingHook(k.hookName("shadow"), e.hooks.clientConfig(k.path("shadow")), k.selector(nil), configMapRule(opCreate))))

	before := c.metrics(t)
	result := c.create(k.ctx(t), k.configMap(ns, "rolled-out", nil), "")
	if result.err != nil {
		t.Fatalf("want admitted: every webhook that matches it is in Warn or Audit; got %v", result.err)
	}
	if got := k.storedConfigMap(t, ns, "rolled-out").Labels["shadowed"]; got != "" {
		t.Errorf("the shadow's patch was applied: label shadowed=%q", got)
	}
	wantWarning := k.hookName("deny-warn") + " would deny this request (enforcement mode Warn): ConfigMaps need an owner label"
	if !slices.Contains(result.warnings, wantWarning) {
		t.Errorf("warnings %q lack %q", result.warnings, wantWarning)
	}
	for _, w := range result.warnings {
		if strings.Contains(w, k.hookName("deny-audit")) || strings.Contains(w, k.hookName("shadow")) {
			t.Errorf("a webhook in Audit only sent a warning: %q", w)
		}
	}

	annotations := c.creationAnnotations(t, ns, "rolled-out")
	wantAnnotation := func(prefix string, contains ...string) {
		t.Helper()
		for key, value := range annotations {
			if strings.HasPrefix(key, prefix) && strings.Contains(value, contains[0]) {
				for _, c := range contains[1:] {
					if !strings.Contains(value, c) {
						t.Errorf("annotation %s = %s lacks %q", key, value, c)
					}
				}
				return
			}
		}
		t.Errorf("no annotation %s… naming %s in %v", prefix, contains[0], annotations)
	}
	wantAnnotation(webhook.WouldDenyValidatingPrefix, `"webhook":"`+k.hookName("deny-audit")+`"`, `"mode":"Audit"`, `"message":"ConfigMaps need an owner label"`)
	wantAnnotation(webhook.ShadowPatchPrefix, `"webhook":"`+k.hookName("shadow")+`"`, `"path":"/metadata/labels`, `"mode":"Audit"`)
	for key, value := range annotations {
		if strings.HasPrefix(key, webhook.WouldDenyValidatingPrefix) && strings.Contains(value, k.hookName("deny-warn")) {
			t.Errorf("the Warn-only webhook's denial is in the audit event: %s", key)
		}
		if strings.HasPrefix(key, "patch.webhook.admission.k8s.io/") && strings.Contains(value, k.hookName("shadow")) {
			t.Errorf("the shadow's patch is recorded as applied: %s", key)
		}
	}

	after := c.metrics(t)
	for _, m := range []struct{ name, typ, mode, outcome string }{
		{k.hookName("deny-warn"), "validating", "Warn", webhook.OutcomeWouldDeny},
		{k.hookName("deny-audit"), "validating", "Audit", webhook.OutcomeWouldDeny},
		{k.hookName("shadow"), "admit", "Audit", webhook.OutcomeWouldPatch},
	} {
		labels := map[string]string{"name": m.name, "type": m.typ, "mode": m.mode, "outcome": m.outcome}
		if got := metricValue(after, metricWouldDeny, labels) - metricValue(before, metricWouldDeny, labels); got != 1 {
			t.Errorf("%s %v rose by %v, want 1", metricWouldDeny, labels, got)
		}
	}

	// The webhook with no mode denies as in stock.
	_, err := k.createConfigMap(t, k.configMap(ns, "enforced", map[string]string{"enforce": "yes"}))
	wantRefused(t, err, k.hookName("deny-enforced"), "ConfigMaps need an owner label")
}

// testShadowNeverHoldsTheRequest is issue 37's reproduction: a shadow that answers only
// after the request's deadline, then an enforced webhook with failurePolicy Fail that
// admits at once. The request is admitted with the enforced webhook's change, the shadow's
// never applied: the request waited for it only its maxWait (500ms), and the shadow's late
// answer is counted.
func testShadowNeverHoldsTheRequest(t *testing.T, e *env, c *cluster) {
	k := newCase(c, rolloutID)
	ns := k.namespace(t, nil)
	slow := map[string]string{"slow": "yes"}
	e.hooks.handle(k.path("slow-shadow"), func(c *call) *admissionv1.AdmissionResponse {
		time.Sleep(3 * time.Second) // a slow webhook, past the request's 2 s deadline
		return patched(setLabel(c.objectMeta(), "shadowed", "yes"))
	})
	e.hooks.handle(k.path("slow-enforced"), func(c *call) *admissionv1.AdmissionResponse {
		return patched(setLabel(c.objectMeta(), "enforced", "yes"))
	})
	shadow := mutatingHook(k.hookName("slow-shadow"), e.hooks.clientConfig(k.path("slow-shadow")), k.selector(nil), configMapRule(opCreate))
	shadow.TimeoutSeconds, shadow.ObjectSelector = ptr(int32(30)), &metav1.LabelSelector{MatchLabels: slow}
	enforced := mutatingHook(k.hookName("slow-enforced"), e.hooks.clientConfig(k.path("slow-enforced")), k.selector(nil), configMapRule(opCreate))
	enforced.ObjectSelector = &metav1.LabelSelector{MatchLabels: slow}
	c.createMutating(t, mutatingConfig(k.configName("slow-shadow"), shadow))
	c.createMutating(t, mutatingConfig(k.configName("slow-zz-enforced"), enforced))

	late := map[string]string{"name": k.hookName("slow-shadow"), "result": webhook.ShadowLate}
	wouldFail := map[string]string{"name": k.hookName("slow-shadow"), "outcome": webhook.OutcomeWouldFail}
	metrics := c.metrics(t)
	before, failedBefore := metricValue(metrics, metricShadowCalls, late), metricValue(metrics, metricWouldDeny, wouldFail)
	result := c.create(k.ctx(t), k.configMap(ns, "not-held", slow), "2s")
	if result.err != nil {
		t.Fatalf("a shadow held or failed the request: %v", result.err)
	}
	stored := k.storedConfigMap(t, ns, "not-held")
	if stored.Labels["enforced"] != "yes" || stored.Labels["shadowed"] != "" {
		t.Errorf("labels %v: want the enforced webhook's, not the shadow's", stored.Labels)
	}
	if !c.waitForMetric(metricShadowCalls, late, before) {
		t.Fatalf("%s %v never rose: the shadow's late answer was not counted", metricShadowCalls, late)
	}
	// Enforced, the shadow's answer would have come past the request's deadline: the
	// preview says the request would fail (counted before the call's result is).
	if got := metricValue(c.metrics(t), metricWouldDeny, wouldFail) - failedBefore; got != 1 {
		t.Errorf("%s %v rose by %v, want 1", metricWouldDeny, wouldFail, got)
	}
}

const metricShadowCalls = "portcullis_admission_webhook_shadow_calls_total"

// The webhook of docs/webhooks.md's "Rolling out a webhook", which the rollout server has in
// step 2's modes (Warn and Audit).
const (
	docsExampleConfiguration = "policy"
	docsExampleWebhook       = "require-owner.policy.example.com"
	docsExampleMessage       = "pods need an owner label"
)

// testDocsRolloutExample is docs/webhooks.md's rollout example, step 2, as written: the
// webhook require-owner.policy.example.com of the configuration policy, in Warn and Audit,
// denies a pod without an owner label, and no enforced webhook is called in the phase. The
// pod is admitted; the client gets the warning the docs show, and the pod's audit event the
// annotation they show (with step 2's mode).
func testDocsRolloutExample(t *testing.T, e *env, c *cluster) {
	k := newCase(c, rolloutID)
	ns := k.namespace(t, map[string]string{"docs-example": "yes"})
	e.hooks.handle(k.path("require-owner"), func(c *call) *admissionv1.AdmissionResponse {
		if _, ok := c.objectMeta().Labels["owner"]; ok {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		return denied(docsExampleMessage)
	})
	podRule := rule([]string{""}, []string{"v1"}, []string{"pods"}, opCreate)
	c.createValidating(t, validatingConfig(docsExampleConfiguration,
		validatingHook(docsExampleWebhook, e.hooks.clientConfig(k.path("require-owner")), k.selector(map[string]string{"docs-example": "yes"}), podRule)))
	// PodSecurityPolicy admits no pod without a policy the creator may use.
	c.createUnstructured(t, pspResource, "", `apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata: {name: `+k.configName("docs-example")+`}
spec:
  privileged: true
  runAsUser: {rule: RunAsAny}
  seLinux: {rule: RunAsAny}
  supplementalGroups: {rule: RunAsAny}
  fsGroup: {rule: RunAsAny}
  volumes: ["*"]
`)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-owner"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
	var warnings []string
	// The policy reaches PodSecurityPolicy through its informer.
	eventually(t, pollTimeout, "the pod admitted", func(context.Context) (bool, error) {
		var err error
		warnings, err = createPod(t, c.Config, pod, false)
		return err == nil, nil
	})
	want := docsExampleWebhook + " would deny this request (enforcement mode Warn+Audit): " + docsExampleMessage
	if !slices.Contains(warnings, want) {
		t.Errorf("the client got warnings %q, want %q (docs/webhooks.md, step 2)", warnings, want)
	}
	wantValue := `{"configuration":"policy","webhook":"require-owner.policy.example.com","mode":"Warn+Audit","outcome":"would_deny","message":"pods need an owner label"}`
	annotations := c.creationAnnotations(t, ns, "no-owner")
	found := false
	for key, value := range annotations {
		if strings.HasPrefix(key, webhook.WouldDenyValidatingPrefix) {
			found = found || value == wantValue
		}
	}
	if !found {
		t.Errorf("the pod's audit event has annotations %v, want %s…: %s (docs/webhooks.md, step 1)", annotations, webhook.WouldDenyValidatingPrefix, wantValue)
	}
}

// testIdempotencyProbe: two mutating webhooks change every ConfigMap; one counts its calls
// in an annotation, so given its own output it changes it again, the other sets a fixed
// annotation. The probe (every changing call, as configured) reports the first, not the
// second, with a dry-run call to each; the server logs the paths, and preflight --webhooks
// shows the finding.
func testIdempotencyProbe(t *testing.T, e *env, c *cluster, binary string) {
	k := newCase(c, rolloutID)
	ns := k.namespace(t, map[string]string{"probe": "yes"})
	e.hooks.handle(k.path("counter"), func(c *call) *admissionv1.AdmissionResponse {
		n, _ := strconv.Atoi(c.objectMeta().Annotations["count"])
		return patched(setAnnotation(c.objectMeta(), "count", strconv.Itoa(n+1)))
	})
	e.hooks.handle(k.path("fixed"), func(c *call) *admissionv1.AdmissionResponse {
		return patched(setAnnotation(c.objectMeta(), "fixed", "yes"))
	})
	selector := k.selector(map[string]string{"probe": "yes"})
	c.createMutating(t, mutatingConfig(k.configName("probe"),
		mutatingHook(k.hookName("counter"), e.hooks.clientConfig(k.path("counter")), selector, configMapRule(opCreate)),
		mutatingHook(k.hookName("fixed"), e.hooks.clientConfig(k.path("fixed")), selector, configMapRule(opCreate))))

	probes := func(text, name, result string) float64 {
		return metricValue(text, webhook.ProbesMetric, map[string]string{"name": name, "result": result})
	}
	before := c.metrics(t)
	stored := k.mustCreateConfigMap(t, k.configMap(ns, "probed", nil))
	if stored.Annotations["count"] != "1" || stored.Annotations["fixed"] != "yes" {
		t.Errorf("stored annotations %v: the probe changed the request", stored.Annotations)
	}
	var after string
	eventually(t, pollTimeout, "both probes to report", func(context.Context) (bool, error) {
		after = c.metrics(t)
		return probes(after, k.hookName("counter"), webhook.ProbeNotIdempotent) > probes(before, k.hookName("counter"), webhook.ProbeNotIdempotent) &&
			probes(after, k.hookName("fixed"), webhook.ProbeIdempotent) > probes(before, k.hookName("fixed"), webhook.ProbeIdempotent), nil
	})
	for _, m := range []struct{ name, result string }{
		{k.hookName("counter"), webhook.ProbeNotIdempotent}, {k.hookName("counter"), webhook.ProbeIdempotent},
		{k.hookName("fixed"), webhook.ProbeIdempotent}, {k.hookName("fixed"), webhook.ProbeNotIdempotent},
	} {
		want := 0.0
		if (m.name == k.hookName("counter")) == (m.result == webhook.ProbeNotIdempotent) {
			want = 1
		}
		if got := probes(after, m.name, m.result) - probes(before, m.name, m.result); got != want {
			t.Errorf("%s %s rose by %v, want %v", m.name, m.result, got, want)
		}
	}
	for _, name := range []string{"counter", "fixed"} {
		dry := 0
		for _, call := range e.hooks.callsTo(k.path(name)) {
			if call.Request.DryRun != nil && *call.Request.DryRun && call.Request.Name == "probed" {
				dry++
			}
		}
		if dry != 1 {
			t.Errorf("%s received %d dry-run calls for the ConfigMap, want 1: the probe", name, dry)
		}
	}
	framework.WaitForFileContaining(t, c.LogFile, "Mutating webhook is not idempotent")
	log, err := os.ReadFile(c.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	if line := lineContaining(string(log), "Mutating webhook is not idempotent"); !strings.Contains(line, k.hookName("counter")) || !strings.Contains(line, "/metadata/annotations/count") {
		t.Errorf("the log line %q does not name the webhook and the path it changed", line)
	}

	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := controlplane.WriteKubeconfig(kubeconfig, c.Config.Host, c.PKI.CA, c.PKI.Admin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "preflight", "--webhooks", "--kubeconfig", kubeconfig)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("preflight --webhooks: %v\n%s", err, out.String())
	}
	finding := fmt.Sprintf("[Warn] mutating webhook %s (MutatingWebhookConfiguration %s) is not idempotent", k.hookName("counter"), k.configName("probe"))
	if !strings.Contains(out.String(), finding) || strings.Contains(out.String(), k.hookName("fixed")+" (MutatingWebhookConfiguration") {
		t.Errorf("preflight --webhooks does not report %q, or reports the idempotent webhook:\n%s", finding, out.String())
	}
}

func lineContaining(text, s string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

var (
	podPresetResource = schema.GroupVersionResource{Group: "settings.k8s.io", Version: "v1alpha1", Resource: "podpresets"}
	pspResource       = schema.GroupVersionResource{Group: "policy", Version: "v1beta1", Resource: "podsecuritypolicies"}
)

// createUnstructured creates the object manifest describes through the dynamic client, and
// deletes it when the test ends.
func (c *cluster) createUnstructured(t *testing.T, gvr schema.GroupVersionResource, ns, manifest string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	client := c.dynamic.Resource(gvr).Namespace(ns)
	if _, err := client.Create(requestContext(t), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s: %v", gvr.Resource, obj.GetName(), err)
	}
	deleteAtEnd(t, gvr.Resource+" "+obj.GetName(), func(ctx context.Context) error {
		return client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
	})
}

// traceStep is one warning of a trace, parsed.
type traceStep struct {
	phase, id, name, verdict string
	paths                    []string
}

var (
	traceLine = regexp.MustCompile(`^` + regexp.QuoteMeta(trace.WarningPrefix) + `(mutating|validating) ([0-9]+(?:\.[0-9]+)?) (.+?): (.*?)(?:, changed (.+))? \([0-9.]+[nµm]?s\)$`)
	// quietLine is several steps that admitted and changed nothing, on one line.
	quietLine = regexp.MustCompile(`^` + regexp.QuoteMeta(trace.WarningPrefix) + `(mutating|validating) ([0-9]+)-([0-9]+) admitted, no change( \(reinvoked\))?: (.+)$`)
	quietStep = regexp.MustCompile(`^([^,()]+) \([0-9.]+[nµm]?s\)$`)
)

// parseTrace returns the steps among warnings, a line of several quiet steps as each of
// them (a reinvoked step's name followed by " (reinvoked)", as on a line of its own), and
// fails on a trace warning it cannot parse.
func parseTrace(t *testing.T, warnings []string) []traceStep {
	t.Helper()
	var steps []traceStep
	for _, w := range warnings {
		if !strings.HasPrefix(w, trace.WarningPrefix) || strings.HasPrefix(w, trace.WarningPrefix+"not returned: ") {
			continue
		}
		if m := quietLine.FindStringSubmatch(w); m != nil {
			first, _ := strconv.Atoi(m[2])
			last, _ := strconv.Atoi(m[3])
			items := strings.Split(m[5], ", ")
			if len(items) != last-first+1 {
				t.Errorf("trace warning %q names %d steps, want %d", w, len(items), last-first+1)
				continue
			}
			for i, item := range items {
				n := quietStep.FindStringSubmatch(item)
				if n == nil {
					t.Errorf("unparseable step %q in trace warning %q", item, w)
					continue
				}
				steps = append(steps, traceStep{phase: m[1], id: strconv.Itoa(first + i), name: n[1] + m[4], verdict: "admitted"})
			}
			continue
		}
		m := traceLine.FindStringSubmatch(w)
		if m == nil {
			t.Errorf("unparseable trace warning %q", w)
			continue
		}
		s := traceStep{phase: m[1], id: m[2], name: m[3], verdict: m[4]}
		if m[5] != "" {
			s.paths = strings.Split(m[5], " ")
		}
		steps = append(steps, s)
	}
	return steps
}

// tracedPod is the pod the trace cases create: the preset selects it by its label, and it
// asks for the trace.
func tracedPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "traced"},
			Annotations: map[string]string{trace.Annotation: "true"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
}

// createPod creates pod as config's user, dry run or not, and returns the warnings.
func createPod(t *testing.T, config *rest.Config, pod *corev1.Pod, dryRun bool) ([]string, error) {
	t.Helper()
	recorder := &framework.WarningRecorder{}
	config = rest.CopyConfig(config)
	config.WarningHandler = recorder
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = client.CoreV1().Pods(pod.Namespace).Create(requestContext(t), pod, opts)
	return recorder.All(), err
}

// testAdmissionTrace: a dry-run pod create asking for the trace returns every step of
// admission as a warning: LimitRanger's defaults, ServiceAccount's token volume, PodPreset's
// environment, PodSecurityPolicy's defaults and annotation, a mutating webhook's label (a
// sub-step of MutatingAdmissionWebhook) and a validating webhook's verdict, in the chain's
// order, each with the paths it changed. A user who may create pods but not trace them gets
// a warning saying so and no step; a user granted the trace verb gets the steps; and the
// audit event of a real create records the same steps.
func testAdmissionTrace(t *testing.T, e *env, c *cluster) {
	k := newCase(c, rolloutID)
	ns := k.namespace(t, map[string]string{"trace": "yes"})
	selector := k.selector(map[string]string{"trace": "yes"})
	podRule := rule([]string{""}, []string{"v1"}, []string{"pods"}, opCreate)
	e.hooks.handle(k.path("label"), func(c *call) *admissionv1.AdmissionResponse {
		return patched(setLabel(c.objectMeta(), "traced-by-webhook", "yes"))
	})
	e.hooks.handle(k.path("check"), func(*call) *admissionv1.AdmissionResponse { return nil })
	c.createMutating(t, mutatingConfig(k.configName("trace"), mutatingHook(k.hookName("label"), e.hooks.clientConfig(k.path("label")), selector, podRule)))
	c.createValidating(t, validatingConfig(k.configName("trace"), validatingHook(k.hookName("check"), e.hooks.clientConfig(k.path("check")), selector, podRule)))
	limits := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:           corev1.LimitTypeContainer,
		Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
		DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
	}}}}
	if _, err := c.Client.CoreV1().LimitRanges(ns).Create(requestContext(t), limits, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.createUnstructured(t, podPresetResource, ns, `apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata: {name: traced-env}
spec:
  selector: {matchLabels: {app: traced}}
  env: [{name: TRACED, value: "yes"}]
`)
	c.createUnstructured(t, pspResource, "", `apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata: {name: `+k.configName("nonroot")+`}
spec:
  runAsUser: {rule: MustRunAs, ranges: [{min: 1000, max: 2000}]}
  seLinux: {rule: RunAsAny}
  supplementalGroups: {rule: RunAsAny}
  fsGroup: {rule: RunAsAny}
  volumes: ["*"]
`)

	// The plugins read presets, policies and limits through informers: wait until the trace
	// shows each of them at work.
	var steps []traceStep
	var traced []string
	eventually(t, pollTimeout, "a trace with every plugin's change", func(context.Context) (bool, error) {
		warnings, err := createPod(t, c.Config, tracedPod(ns, "traced"), true)
		if err != nil {
			return false, err
		}
		traced, steps = warnings, parseTrace(t, warnings)
		found := 0
		for _, s := range steps {
			if (s.name == "PodPreset" && slices.Contains(s.paths, "/spec/containers/0/env")) ||
				(s.name == "PodSecurityPolicy" && s.phase == "mutating" && slices.Contains(s.paths, "/spec/containers/0/securityContext")) ||
				(s.name == "LimitRanger" && slices.Contains(s.paths, "/spec/containers/0/resources/limits")) {
				found++
			}
		}
		return found == 3, nil
	})

	t.Logf("the trace:\n%s", strings.Join(traced, "\n"))

	// Numbering: plugin steps 1, 2, … per phase, a webhook's under its plugin's number.
	plugins := map[string][]string{}
	position := map[string]int{}
	for _, s := range steps {
		if strings.Contains(s.id, ".") {
			continue
		}
		plugins[s.phase] = append(plugins[s.phase], s.name)
		if want := strconv.Itoa(len(plugins[s.phase])); s.id != want {
			t.Errorf("%s step %q numbered %s, want %s", s.phase, s.name, s.id, want)
		}
		if _, seen := position[s.name]; s.phase == "mutating" && !seen {
			position[s.name] = len(plugins[s.phase])
		}
		if s.verdict != "admitted" {
			t.Errorf("%s %s: verdict %q, want admitted", s.phase, s.name, s.verdict)
		}
	}
	order := []string{"PodPreset", "LimitRanger", "ServiceAccount", "PodSecurityPolicy", "MutatingAdmissionWebhook"}
	for i := 1; i < len(order); i++ {
		if position[order[i-1]] == 0 || position[order[i]] <= position[order[i-1]] {
			t.Errorf("mutating steps %q: want %s before %s", plugins["mutating"], order[i-1], order[i])
		}
	}
	for _, phase := range []string{"mutating", "validating"} {
		for _, name := range []string{"PodSecurityPolicy", "ServiceAccount"} {
			if !slices.Contains(plugins[phase], name) {
				t.Errorf("%s steps %q lack %s", phase, plugins[phase], name)
			}
		}
	}

	find := func(phase, name string) traceStep {
		t.Helper()
		for _, s := range steps {
			if s.phase == phase && s.name == name {
				return s
			}
		}
		t.Errorf("no %s step %s in the trace", phase, name)
		return traceStep{}
	}
	wantPaths := func(s traceStep, paths ...string) {
		t.Helper()
		for _, p := range paths {
			if !slices.Contains(s.paths, p) {
				t.Errorf("%s %s %s changed %q; want %s among them", s.phase, s.id, s.name, s.paths, p)
			}
		}
	}
	wantPaths(find("mutating", "PodPreset"), "/spec/containers/0/env", "/metadata/annotations/podpreset.admission.kubernetes.io~1podpreset-traced-env")
	wantPaths(find("mutating", "LimitRanger"), "/spec/containers/0/resources/limits", "/spec/containers/0/resources/requests", "/metadata/annotations/kubernetes.io~1limit-ranger")
	wantPaths(find("mutating", "ServiceAccount"), "/spec/serviceAccountName", "/spec/volumes", "/spec/containers/0/volumeMounts")
	wantPaths(find("mutating", "PodSecurityPolicy"), "/spec/containers/0/securityContext", "/metadata/annotations/kubernetes.io~1psp")
	webhookStep := find("mutating", "MutatingAdmissionWebhook")
	wantPaths(webhookStep, "/metadata/labels/traced-by-webhook")
	label := find("mutating", "webhook "+k.hookName("label")+" ("+k.configName("trace")+")")
	if label.id != webhookStep.id+".1" || label.verdict != "admitted" || !slices.Equal(label.paths, []string{"/metadata/labels/traced-by-webhook"}) {
		t.Errorf("the mutating webhook's step %+v, want %s.1, admitted, changing its label", label, webhookStep.id)
	}
	if s := find("mutating", "NamespaceLifecycle"); len(s.paths) != 0 {
		t.Errorf("NamespaceLifecycle changed %q", s.paths)
	}
	check := find("validating", "webhook "+k.hookName("check")+" ("+k.configName("trace")+")")
	if check.verdict != "admitted" || !strings.HasPrefix(check.id, strconv.Itoa(slices.Index(plugins["validating"], "ValidatingAdmissionWebhook")+1)+".") {
		t.Errorf("the validating webhook's step %+v, want admitted under ValidatingAdmissionWebhook's number", check)
	}

	// Users: viewer may create pods (and use the policy), tracer may trace them too.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pods"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}},
		{APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"}, Verbs: []string{"use"}},
	}}
	tracing := role.DeepCopy()
	tracing.Name, tracing.Rules[0].Verbs = "trace-pods", []string{"create", trace.Verb}
	for user, r := range map[string]*rbacv1.Role{"viewer": role, "tracer": tracing} {
		if _, err := c.Client.RbacV1().Roles(ns).Create(requestContext(t), r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
		if _, err := c.Client.RbacV1().RoleBindings(ns).Create(requestContext(t), binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tokenConfig := func(token string) *rest.Config {
		config := rest.AnonymousClientConfig(c.Config)
		config.BearerToken = token
		return config
	}
	var viewerWarnings []string
	eventually(t, pollTimeout, "viewer's RoleBinding to be in force", func(context.Context) (bool, error) {
		var err error
		viewerWarnings, err = createPod(t, tokenConfig(viewerToken), tracedPod(ns, "viewed"), true)
		return err == nil, nil
	})
	wantRefusal := fmt.Sprintf(`%snot returned: user "viewer" may not %s pods in namespace %s`, trace.WarningPrefix, trace.Verb, ns)
	if got := parseTrace(t, viewerWarnings); len(got) != 0 || !slices.ContainsFunc(viewerWarnings, func(w string) bool { return strings.HasPrefix(w, wantRefusal) }) {
		t.Errorf("viewer, who may not trace, got warnings %q; want no step and %q", viewerWarnings, wantRefusal)
	}
	eventually(t, pollTimeout, "tracer's trace", func(context.Context) (bool, error) {
		warnings, err := createPod(t, tokenConfig(tracerToken), tracedPod(ns, "traced-by-tracer"), true)
		return err == nil && len(parseTrace(t, warnings)) > 0, nil
	})

	// Not a dry run: no warning, and the audit event carries the steps.
	warnings, err := createPod(t, c.Config, tracedPod(ns, "audited"), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := parseTrace(t, warnings); len(got) != 0 {
		t.Errorf("a create that is no dry run returned trace steps %q", warnings)
	}
	annotations := c.creationAnnotations(t, ns, "audited")
	preset := annotations[fmt.Sprintf("%smutating-%d", trace.AuditAnnotationPrefix, position["PodPreset"])]
	if !strings.HasPrefix(preset, "PodPreset: admitted, changed ") || !strings.Contains(preset, "/spec/containers/0/env") {
		t.Errorf("the audit event's PodPreset step is %q; annotations %v", preset, annotations)
	}
	for _, key := range []string{
		fmt.Sprintf("mutating-%d-1", position["MutatingAdmissionWebhook"]),
		fmt.Sprintf("validating-%d", len(plugins["validating"])),
	} {
		if annotations[trace.AuditAnnotationPrefix+key] == "" {
			t.Errorf("the audit event lacks %s%s: %v", trace.AuditAnnotationPrefix, key, annotations)
		}
	}
}
