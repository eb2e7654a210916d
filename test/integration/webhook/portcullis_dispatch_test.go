package webhook

// This file proves, against a real server and etcd, what Portcullis's own webhook dispatch
// adds to stock's, and that it keeps stock's wire format:
//
//   - a circuit breaker stops calling a dead webhook (Ignore: skipped, failed open, audited
//     and warned; Fail: refused at once) and closes again once the webhook answers;
//   - the time budget keeps dead webhooks from failing a request with a short deadline,
//     which stock fails with a timeout, and a call it cuts short does not open a breaker;
//   - the first validating denial returns at once and cancels the calls still out;
//   - along a chain of mutating webhooks, each webhook receives exactly the bytes stock's
//     dispatch sends it;
//   - per-webhook enforcement modes, the idempotency probe and the admission trace
//     (rollout_test.go).

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/portcullis-k8s/portcullis/internal/pki"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// dispatchSettings open a breaker at the first failed call, so that one dead call is enough
// to see it open, and probe again within a second.
const dispatchSettings = `circuitBreaker:
  failureThreshold: 1
  initialBackoff: 100ms
  maxBackoff: 1s
timeBudget:
  deadlineMargin: 2s
`

// deadTimeout is the timeoutSeconds of the webhooks that never answer.
const deadTimeout = int32(10)

// The breakers' and the budget's metrics, and upstream's count of failed-open calls.
const (
	metricBreakerState  = "portcullis_admission_webhook_breaker_state"
	metricShortCircuits = "portcullis_admission_webhook_short_circuits_total"
	metricBudgetSheds   = "portcullis_admission_webhook_budget_sheds_total"
	metricFailOpen      = "apiserver_admission_webhook_fail_open_count"
)

// failedOpenMutating is the audit annotation key, less its suffix round_R_index_I, that
// stock gives a mutating webhook that failed open.
const failedOpenMutating = "failed-open.mutation.webhook.admission.k8s.io/"

// chainToken authenticates the client of the mutating-chain case to both servers as the
// same user, with nothing in its identity (unlike a client certificate's credential id)
// that differs between them.
const chainToken = "portcullis-dispatch-chain-token"

// TestPortcullisDispatch starts one etcd and a Portcullis server whose webhook plugins both
// run with dispatchSettings; a stock server and a Portcullis server with no configuration
// join it, each under its own etcd prefix, for the cases that compare them.
func TestPortcullisDispatch(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	e := newDispatchEnv(t)
	tokens := filepath.Join(e.dir, "tokens.csv")
	writeFile(t, tokens, chainToken+",chain-client,chain-client-uid,system:masters\n"+
		viewerToken+",viewer,viewer-uid\n"+tracerToken+",tracer,tracer-uid\n"+
		aliceToken+",alice,alice-uid\n"+bobToken+",bob,bob-uid\n")
	plugins := "--enable-admission-plugins=" + strings.Join(recommendedPlugins, ",")

	dir := filepath.Join(e.dir, "dispatch")
	auditLog := filepath.Join(dir, "audit.log")
	admissionConfig := writeAdmissionConfig(t, dir, dispatchEntries("", dispatchSettings))
	dispatch := startCluster(t, e, "dispatch", bins.APIServer, etcd, plugins,
		"--admission-control-config-file="+admissionConfig,
		"--audit-policy-file="+writeAuditPolicy(t, dir),
		"--audit-log-path="+auditLog,
		"--token-auth-file="+tokens)
	dispatch.auditLog = auditLog

	t.Run("dead webhook: breaker", func(t *testing.T) { testDeadWebhookBreaker(t, e, dispatch) })
	t.Run("open breaker: bob learns nothing of alice's call", func(t *testing.T) { testBreakerTellsNoOneElse(t, e, dispatch) })

	// Audited as the dispatch server is, to compare what they record.
	audited := func(name, binary string) *cluster {
		dir := filepath.Join(e.dir, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		auditLog := filepath.Join(dir, "audit.log")
		c := startCluster(t, e, name, binary, etcd, plugins,
			"--audit-policy-file="+writeAuditPolicy(t, dir), "--audit-log-path="+auditLog, "--token-auth-file="+tokens)
		c.auditLog = auditLog
		return c
	}
	stock := audited("stock", bins.StockAPIServer)
	// Our binary with no configuration: upstream's webhook plugins.
	unconfigured := audited("unconfigured", bins.APIServer)

	t.Run("budget: four dead Ignore webhooks", func(t *testing.T) { testBudget(t, e, dispatch, stock) })
	t.Run("early exit", func(t *testing.T) { testEarlyExit(t, dispatch) })
	t.Run("mutating chain: stock's bytes", func(t *testing.T) { testStockBytes(t, e, dispatch, stock) })
	t.Run("multi-version custom resource chain: stock's bytes and object", func(t *testing.T) { testMultiVersionChain(t, e, dispatch, stock) })
	t.Run("patch shapes, a pod through seven patching webhooks: stock's bytes and object", func(t *testing.T) { testPatchShapesMatchStock(t, e, dispatch, stock) })
	t.Run("metrics, audit annotations and warnings: stock's", func(t *testing.T) {
		testRecordsMatchStock(t, e, map[string]*cluster{"our dispatch": dispatch, "ours, no settings": unconfigured, "stock": stock})
	})

	// Rolling a webhook out and reading admission (rollout_test.go).
	rollout := startRolloutCluster(t, e, bins, etcd, tokens)
	t.Run("rollout: per-webhook enforcement modes", func(t *testing.T) { testWebhookModes(t, e, rollout) })
	t.Run("rollout: a slow shadow never holds the request", func(t *testing.T) { testShadowNeverHoldsTheRequest(t, e, rollout) })
	t.Run("rollout: the docs' Warn and Audit example", func(t *testing.T) { testDocsRolloutExample(t, e, rollout) })
	t.Run("rollout: idempotency probe", func(t *testing.T) { testIdempotencyProbe(t, e, rollout, bins.APIServer) })
	t.Run("admission trace", func(t *testing.T) { testAdmissionTrace(t, e, rollout) })
	t.Run("admission trace: a patch retried after a conflict", func(t *testing.T) { testTraceRetriedWrite(t, e, rollout) })
}

// Users of the dispatch server's token file who may create ConfigMaps in a case's namespace
// only (testBreakerTellsNoOneElse grants it).
const (
	aliceToken = "portcullis-dispatch-alice-token"
	bobToken   = "portcullis-dispatch-bob-token"
)

// testBreakerTellsNoOneElse is issue 49's reproduction: a Fail webhook answers 500 with a body
// naming the object it was asked about, as a webhook's lookup error does. alice's create of
// payroll fails and opens the webhook's breaker (threshold 1); bob's creates are refused,
// by the open breaker or by a probe call of his own, and none carries anything of alice's
// call: neither her object's name, nor the webhook's address.
func testBreakerTellsNoOneElse(t *testing.T, e *env, c *cluster) {
	k := newCase(c, "leak")
	ns := k.namespace(t, nil)
	e.hooks.handleRaw(k.path("lookup"), func(w http.ResponseWriter, _ *http.Request, call *call) {
		http.Error(w, "lookup failed for "+ns+"/"+call.objectMeta().Name, http.StatusInternalServerError)
	})
	leak := map[string]string{"leak": "yes"}
	hook := validatingHook(k.hookName("lookup"), e.hooks.clientConfig(k.path("lookup")), k.selector(nil), configMapRule(opCreate))
	hook.ObjectSelector = &metav1.LabelSelector{MatchLabels: leak}
	c.createValidating(t, validatingConfig(k.configName("lookup"), hook))
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
	}}
	if _, err := c.Client.RbacV1().Roles(ns).Create(requestContext(t), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}, {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(requestContext(t), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createAs := func(token, name string) error {
		config := rest.AnonymousClientConfig(c.Config)
		config.BearerToken = token
		client, err := kubernetes.NewForConfig(config)
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.CoreV1().ConfigMaps(ns).Create(requestContext(t), k.configMap(ns, name, leak), metav1.CreateOptions{})
		return err
	}
	var aliceErr error
	eventually(t, pollTimeout, "alice's create to reach the webhook (her RoleBinding in force)", func(context.Context) (bool, error) {
		aliceErr = createAs(aliceToken, "payroll")
		return apierrors.IsInternalError(aliceErr), nil
	})
	if !strings.Contains(aliceErr.Error(), "lookup failed for "+ns+"/payroll") {
		t.Fatalf("alice's own failure %v does not carry her webhook's answer", aliceErr)
	}
	webhookURL := e.hooks.clientConfig(k.path("lookup")).URL
	shortCircuited := false
	// A probe call (the backoff over) fails again and reopens the breaker for longer, so the
	// open breaker is met within a few requests.
	for i := 0; i < 20 && !shortCircuited; i++ {
		err := createAs(bobToken, fmt.Sprintf("bob-%d", i))
		if !apierrors.IsInternalError(err) {
			t.Fatalf("bob's create %d: want a 500, got %v", i, err)
		}
		shortCircuited = strings.Contains(err.Error(), "circuit breaker open; not called")
		leaks := []string{"payroll", "alice"}
		if shortCircuited {
			// A probe call's failure is bob's own, and names the webhook's address as
			// upstream's does; a call not made names nothing of the earlier ones.
			leaks = append(leaks, *webhookURL, "lookup failed")
		}
		for _, leaked := range leaks {
			if strings.Contains(err.Error(), leaked) {
				t.Errorf("bob's create %d was refused with %q, which tells of %q", i, err, leaked)
			}
		}
	}
	if !shortCircuited {
		t.Error("none of bob's 20 creates met the open breaker")
	}
}

// newDispatchEnv is the part of env these cases use: the CA and the webhook server.
func newDispatchEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{dir: dir, etcdPrefix: "portcullis-"}
	var err error
	if e.ca, err = pki.LoadOrCreateCA(dir, "webhook-ca"); err != nil {
		t.Fatal(err)
	}
	e.hooks = startWebhookServer(t, dir, serverOptions{ca: e.ca, certName: "webhook"})
	return e
}

// testDeadWebhookBreaker: two mutating webhooks, Ignore and Fail, whose endpoint accepts
// connections and never answers. The first call to each lasts its timeout and opens its
// breaker; then the Ignore webhook is skipped (the request is admitted, audited and warned)
// and the Fail webhook's requests are refused at once, without a call. When the endpoint
// comes back, a probe call closes the breaker and the mutation applies again.
func testDeadWebhookBreaker(t *testing.T, e *env, c *cluster) {
	k := newCase(c, "breaker")
	ns := k.namespace(t, nil)
	dead := startBlackhole(t)
	const deadLabel = "dead"
	hook := func(name string, policy admissionregistrationv1.FailurePolicyType) admissionregistrationv1.MutatingWebhook {
		h := mutatingHook(k.hookName(name), dead.clientConfig(k.path(name), e.hooks.CABundle), k.selector(nil), configMapRule(opCreate))
		h.FailurePolicy, h.TimeoutSeconds = ptr(policy), ptr(deadTimeout)
		h.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{deadLabel: name}}
		return h
	}
	ignoreName, failName := k.hookName("ignore"), k.hookName("fail")
	k.c.createMutating(t, mutatingConfig(k.configName("m"), hook("ignore", admissionregistrationv1.Ignore), hook("fail", admissionregistrationv1.Fail)))
	cm := func(name, hook string) *corev1.ConfigMap {
		return k.configMap(ns, name, map[string]string{deadLabel: hook})
	}

	// Every create left pending, such as a probe call's, is waited for before the case ends.
	var pending []<-chan createResult
	defer func() {
		for _, ch := range pending {
			<-ch
		}
	}()

	// The first call to each lasts its timeout; the two are made together.
	firstIgnore := c.createAsync(k.ctx(t), cm("first-ignore", "ignore"), "")
	firstFail := c.createAsync(k.ctx(t), cm("first-fail", "fail"), "")
	if r := <-firstIgnore; r.err != nil {
		t.Errorf("the first call to the dead Ignore webhook: want admitted, got %v", r.err)
	} else if r.object.Labels[mutatedLabel] != "" {
		t.Errorf("the first call to the dead Ignore webhook: the object was mutated: %v", r.object.Labels)
	}
	wantRefused(t, (<-firstFail).err, "failed calling webhook", failName)
	if n := dead.connections(); n != 2 {
		t.Errorf("the dead endpoint received %d connections for the two first calls, want 2", n)
	}

	ignored := dead.shortCircuited(t, c, cm("open-ignore", "ignore"), cm("open-ignore-2", "ignore"), &pending)
	t.Run("Ignore: skipped while open, failed open, audited and warned", func(t *testing.T) {
		if ignored.err != nil {
			t.Fatalf("want admitted, got %v", ignored.err)
		}
		if ignored.object.Labels[mutatedLabel] != "" {
			t.Errorf("the object was mutated: %v", ignored.object.Labels)
		}
		want := fmt.Sprintf("admission webhook %q (failurePolicy Ignore) skipped: circuit breaker open", ignoreName)
		if !slices.ContainsFunc(ignored.warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
			t.Errorf("the client received warnings %q, want one beginning %q", ignored.warnings, want)
		}
		wantFailedOpen(t, c, ns, ignored.object.Name, failedOpenMutating, ignoreName)
	})
	failed := dead.shortCircuited(t, c, cm("open-fail", "fail"), cm("open-fail-2", "fail"), &pending)
	t.Run("Fail: refused at once while open, naming the breaker", func(t *testing.T) {
		wantRefused(t, failed.err, fmt.Sprintf("failed calling webhook %q: circuit breaker open; not called", failName))
		if !apierrors.IsInternalError(failed.err) {
			t.Errorf("want a 500 InternalError, got %v", failed.err)
		}
	})
	t.Run("metrics count the short circuits and the failed-open calls", func(t *testing.T) {
		text := c.metrics(t)
		for _, want := range []struct {
			metric string
			labels map[string]string
		}{
			{metricShortCircuits, map[string]string{"name": ignoreName, "type": "admit", "failure_policy": "Ignore"}},
			{metricShortCircuits, map[string]string{"name": failName, "type": "admit", "failure_policy": "Fail"}},
			{metricFailOpen, map[string]string{"name": ignoreName, "type": "admit"}},
		} {
			if len(metricSamples(text, want.metric, want.labels)) == 0 {
				t.Errorf("/metrics has no sample of %s%v", want.metric, want.labels)
			}
		}
	})

	// The endpoint comes back as a webhook that labels what it admits.
	dead.comeBack(t, e, func(s *webhookServer) {
		s.handle(k.path("ignore"), func(c *call) *admissionv1.AdmissionResponse {
			return patched(setLabel(c.objectMeta(), mutatedLabel, "yes"))
		})
		s.handle(k.path("fail"), func(*call) *admissionv1.AdmissionResponse { return nil })
	})
	t.Run("a probe call to the webhook, back, closes the breaker", func(t *testing.T) {
		eventually(t, pollTimeout, "a create the webhook, back, has mutated", func(ctx context.Context) (bool, error) {
			probe := cm("", "ignore")
			probe.GenerateName = "back-"
			created, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, probe, metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			return created.Labels[mutatedLabel] == "yes", nil
		})
		// Closed: the next create calls the webhook as well.
		created := k.mustCreateConfigMap(t, cm("closed-ignore", "ignore"))
		if created.Labels[mutatedLabel] != "yes" {
			t.Errorf("after the breaker closed, a create was not mutated: %v", created.Labels)
		}
		samples := metricSamples(c.metrics(t), metricBreakerState, map[string]string{"name": ignoreName, "type": "admit"})
		if len(samples) != 1 || !strings.HasSuffix(samples[0], " 0") {
			t.Errorf("breaker state %q, want one sample of 0 (closed)", samples)
		}
	})
}

// testBudget: four dead mutating webhooks, all Ignore with timeoutSeconds 10, and a request
// with a 6 s deadline. The budget (the deadline less a margin of 2 s, but at most a tenth of
// the request's 6 s) cuts the first call short and leaves the others no time, so they are
// not called: the request is admitted, each webhook failed open, audited and warned. The
// first webhook had the whole budget and did not answer, so its breaker opens; the others
// were never called and have none. Stock, given the same webhooks, fails the request at its
// deadline.
func testBudget(t *testing.T, e *env, ours, stock *cluster) {
	type side struct {
		k    *suiteCase
		ns   string
		dead *blackhole
	}
	// The same webhooks, by name, on both servers.
	var names []string
	for i := 1; i <= 4; i++ {
		names = append(names, fmt.Sprintf("dead-%d", i))
	}
	setUp := func(c *cluster) side {
		s := side{k: newCase(c, "budget"), dead: startBlackhole(t)}
		s.ns = s.k.namespace(t, nil)
		var hooks []admissionregistrationv1.MutatingWebhook
		for _, name := range names {
			h := mutatingHook(s.k.hookName(name), s.dead.clientConfig(s.k.path(name), e.hooks.CABundle), s.k.selector(nil), configMapRule(opCreate))
			h.FailurePolicy, h.TimeoutSeconds = ptr(admissionregistrationv1.Ignore), ptr(deadTimeout)
			hooks = append(hooks, h)
		}
		s.k.c.createMutating(t, mutatingConfig(s.k.configName("m"), hooks...))
		return s
	}
	o, s := setUp(ours), setUp(stock)
	for i, name := range names {
		names[i] = o.k.hookName(name)
	}

	// The two requests are made together.
	oursDone := ours.createAsync(o.k.ctx(t), o.k.configMap(o.ns, "budgeted", nil), "6s")
	stockDone := stock.createAsync(s.k.ctx(t), s.k.configMap(s.ns, "budgeted", nil), "6s")
	r, stockResult := <-oursDone, <-stockDone

	t.Run("Portcullis admits the request, every dead webhook failed open", func(t *testing.T) {
		if r.err != nil {
			t.Fatalf("want admitted, got %v", r.err)
		}
		for i, name := range names {
			// The first is called and cut short; the budget is then spent. The client gets
			// the webhook's name and the verdict, never the webhook's URL or error.
			reason := "skipped: the request's webhook time budget is spent"
			if i == 0 {
				reason = "failed open: no answer within the request's webhook time budget"
			}
			want := fmt.Sprintf("admission webhook %q (failurePolicy Ignore) %s", name, reason)
			if !slices.Contains(r.warnings, want) {
				t.Errorf("the client received warnings %q, want %q", r.warnings, want)
			}
			for _, w := range r.warnings {
				if strings.Contains(w, "127.0.0.1") || strings.Contains(w, "https://") {
					t.Errorf("a warning carries the webhook's address: %q", w)
				}
			}
		}
		wantFailedOpen(t, ours, o.ns, "budgeted", failedOpenMutating, names...)
		if n := o.dead.connections(); n != 1 {
			t.Errorf("the dead endpoint received %d connections, want 1: the budget left the last three webhooks no time", n)
		}
	})
	t.Run("a call given the whole budget opens its breaker; calls not made open none", func(t *testing.T) {
		text := ours.metrics(t)
		for i, name := range names {
			labels := map[string]string{"name": name, "type": "admit"}
			// The first webhook was given the whole budget (all of its timeoutSeconds the
			// budget could give) and did not answer: a failure, which opens its breaker at
			// this case's threshold of 1. The others, not called for want of budget, were
			// never consulted and have no breaker at all.
			samples := metricSamples(text, metricBreakerState, labels)
			open := len(samples) == 1 && strings.HasSuffix(samples[0], " 2")
			if i == 0 && !open {
				t.Errorf("breaker state of %s: %q, want one sample of 2 (open)", name, samples)
			}
			if i > 0 && len(samples) > 0 {
				t.Errorf("breaker state of %s: %q, want none", name, samples)
			}
			if samples := metricSamples(text, metricBudgetSheds, labels); len(samples) == 0 {
				t.Errorf("/metrics has no sample of %s for %s", metricBudgetSheds, name)
			}
		}
	})
	t.Run("stock fails the request at its deadline", func(t *testing.T) {
		err := stockResult.err
		if err == nil {
			t.Fatalf("stock admitted the request; want it failed at its deadline")
		}
		// Stock answers with a Timeout, or, when its timeout filter fires while the handler
		// is already writing that answer (both at the same deadline), aborts the response:
		// an HTTP/2 stream reset, which is no API status.
		if _, isStatus := err.(apierrors.APIStatus); isStatus && !apierrors.IsTimeout(err) {
			t.Errorf("stock: want a Timeout error or an aborted response, got %v", err)
		}
		s.k.wantNotStored(t, s.ns, "budgeted")
		if n := s.dead.connections(); n != 1 {
			t.Errorf("stock: the dead endpoint received %d connections, want 1 (the first call outlasts the request)", n)
		}
	})
}

// holders is how many validating webhooks hold their call in the early-exit case, and
// holdCap how long each holds one at most.
const (
	holders = 7
	holdCap = 5 * time.Second
)

// testEarlyExit: seven validating webhooks hold their call; an eighth, once the seven are in
// flight, denies. The server answers with the denial without waiting for the seven, and
// cancels their calls.
func testEarlyExit(t *testing.T, c *cluster) {
	k := newCase(c, "early-exit")
	ns := k.namespace(t, nil)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var arrived, finished, cancelled atomic.Int32
	allArrived := make(chan struct{})

	var hooks []admissionregistrationv1.ValidatingWebhook
	for i := 1; i <= holders; i++ {
		name := fmt.Sprintf("holder-%d", i)
		k.c.hooks.handleRaw(k.path(name), func(w http.ResponseWriter, r *http.Request, c *call) {
			if arrived.Add(1) == holders {
				close(allArrived)
			}
			timer := time.NewTimer(holdCap)
			defer timer.Stop()
			select {
			case <-r.Context().Done():
				cancelled.Add(1)
				return
			case <-release:
			case <-timer.C:
			}
			finished.Add(1)
			writeReview(w, c.APIVersion, &admissionv1.AdmissionResponse{UID: c.Request.UID, Allowed: true})
		})
		h := validatingHook(k.hookName(name), k.c.hooks.clientConfig(k.path(name)), k.selector(nil), configMapRule(opCreate))
		h.TimeoutSeconds = ptr(deadTimeout)
		hooks = append(hooks, h)
	}
	k.c.hooks.handle(k.path("denier"), func(*call) *admissionv1.AdmissionResponse {
		timer := time.NewTimer(holdCap)
		defer timer.Stop()
		select {
		case <-allArrived:
			return denied("the denier refuses this object")
		case <-timer.C:
			return denied(fmt.Sprintf("only %d of the %d holders' calls arrived", arrived.Load(), holders))
		}
	})
	hooks = append(hooks, validatingHook(k.hookName("denier"), k.c.hooks.clientConfig(k.path("denier")), k.selector(nil), configMapRule(opCreate)))
	k.c.createValidating(t, validatingConfig(k.configName("v"), hooks...))

	_, err := k.createConfigMap(t, k.configMap(ns, "refused", nil))
	finishedAtAnswer := finished.Load()
	wantRefused(t, err, fmt.Sprintf("admission webhook %q denied the request: the denier refuses this object", k.hookName("denier")))
	if finishedAtAnswer != 0 {
		t.Errorf("%d of the %d held calls had completed when the server answered: it waited for them", finishedAtAnswer, holders)
	}
	eventually(t, pollTimeout, "the server to cancel the held calls", func(context.Context) (bool, error) {
		if n := finished.Load(); n != 0 {
			return false, fmt.Errorf("%d held calls completed without being cancelled", n)
		}
		return cancelled.Load() == holders, nil
	})
	k.wantNotStored(t, ns, "refused")
}

// chainLength is how many mutating webhooks the chain has.
const chainLength = 10

// testStockBytes: one configuration of ten mutating webhooks, each adding a label, on both
// servers; the same ConfigMap created on both. Each webhook receives from Portcullis the
// request body stock sends it, byte for byte, but for what differs between any two requests
// (the request's uid; the second of the managedFields entry's time).
func testStockBytes(t *testing.T, e *env, ours, stock *cluster) {
	const nsName, cmName = "chain-bytes", "chained"
	data := map[string]string{"key": "value", "html": "<b>&amp;</b>", "unicode": "é ✓ \u2028", "quote": `"q"`}
	servers := map[string]*cluster{"ours": ours, "stock": stock}
	k := map[string]*suiteCase{}
	for side, c := range servers {
		k[side] = newCase(c, "chain-"+side)
		// The same namespace name on both, labelled for the case's webhooks.
		if _, err := c.Client.CoreV1().Namespaces().Create(requestContext(t), &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: nsName, Labels: map[string]string{caseLabel: "chain"}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: creating namespace %s: %v", side, nsName, err)
		}
		var hooks []admissionregistrationv1.MutatingWebhook
		for i := range chainLength {
			label := fmt.Sprintf("chain-%02d", i)
			path := k[side].path(label)
			e.hooks.handle(path, func(c *call) *admissionv1.AdmissionResponse {
				return patched(setLabel(c.objectMeta(), label, "yes"))
			})
			hooks = append(hooks, mutatingHook("chain-"+label+".webhook.test", e.hooks.clientConfig(path),
				&metav1.LabelSelector{MatchLabels: map[string]string{caseLabel: "chain"}}, configMapRule(opCreate)))
		}
		c.createMutating(t, mutatingConfig("chain", hooks...))
	}

	for side, c := range servers {
		client, _ := tokenClients(t, c)
		created, err := client.CoreV1().ConfigMaps(nsName).Create(requestContext(t), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: cmName, Labels: map[string]string{"app": "chain"}, Annotations: map[string]string{"note": "<one> & <two>"}},
			Data:       data,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: creating the ConfigMap: %v", side, err)
		}
		stored := k[side].storedConfigMap(t, nsName, cmName)
		for i := range chainLength {
			label := fmt.Sprintf("chain-%02d", i)
			if created.Labels[label] != "yes" || stored.Labels[label] != "yes" {
				t.Errorf("%s: label %s missing: created %v, stored %v", side, label, created.Labels, stored.Labels)
			}
		}
	}

	var labels []string
	for i := range chainLength {
		labels = append(labels, fmt.Sprintf("chain-%02d", i))
	}
	wantStockBodies(t, e, k, labels, cmName)
}

// wantStockBodies fails unless each of hooks (the last element of its path, in k's case on
// each side, "ours" and "stock") was called once for object, with the same body from both
// servers but for what differs between any two requests.
func wantStockBodies(t *testing.T, e *env, k map[string]*suiteCase, hooks []string, object string) {
	t.Helper()
	for _, hook := range hooks {
		body := map[string][]byte{}
		for side, c := range k {
			calls := callsFor(e.hooks, c.path(hook), object)
			if len(calls) != 1 {
				t.Fatalf("%s: webhook %s was called %d times, want once", side, hook, len(calls))
			}
			body[side] = normalizeRequestBody(calls[0])
		}
		if !bytes.Equal(body["ours"], body["stock"]) {
			t.Errorf("webhook %s received a request body other than stock's:\n%s", hook, firstDifference(body["ours"], body["stock"]))
		}
	}
}

// managedFieldsTime is the time of a managedFields entry, which has a resolution of one
// second.
var managedFieldsTime = regexp.MustCompile(`"time":"[^"]*"`)

// normalizeRequestBody is the body of c less what differs between any two requests: the
// request's uid and the managedFields entries' times.
func normalizeRequestBody(c *call) []byte {
	body := bytes.ReplaceAll(c.Body, []byte(c.Request.UID), []byte("REQUEST-UID"))
	return managedFieldsTime.ReplaceAll(body, []byte(`"time":"TIME"`))
}

// firstDifference shows where ours and stock's first differ.
func firstDifference(ours, stock []byte) string {
	i := 0
	for i < len(ours) && i < len(stock) && ours[i] == stock[i] {
		i++
	}
	from := max(i-80, 0)
	excerpt := func(b []byte) string { return string(b[from:min(i+80, len(b))]) }
	return fmt.Sprintf("at byte %d:\n  ours:  …%s…\n  stock: …%s…\nours in full:  %s\nstock in full: %s", i, excerpt(ours), excerpt(stock), ours, stock)
}

// createResult is a server's answer to a create.
type createResult struct {
	object   *corev1.ConfigMap
	warnings []string
	err      error
}

// createAsync creates cm in the background, with the request timeout timeout ("": the
// server's default), recording the warnings of the answer.
func (c *cluster) createAsync(ctx context.Context, cm *corev1.ConfigMap, timeout string) <-chan createResult {
	done := make(chan createResult, 1)
	go func() { done <- c.create(ctx, cm, timeout) }()
	return done
}

func (c *cluster) create(ctx context.Context, cm *corev1.ConfigMap, timeout string) createResult {
	recorder := &framework.WarningRecorder{}
	config := rest.CopyConfig(c.Config)
	config.WarningHandler = recorder
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return createResult{err: err}
	}
	request := client.CoreV1().RESTClient().Post().Namespace(cm.Namespace).Resource("configmaps").Body(cm)
	if timeout != "" {
		// The server's deadline only: the client waits for the server's answer.
		request = request.Param("timeout", timeout)
	}
	out := &corev1.ConfigMap{}
	err = request.Do(ctx).Into(out)
	return createResult{object: out, warnings: recorder.All(), err: err}
}

// metrics reads the server's /metrics.
func (c *cluster) metrics(t *testing.T) string {
	t.Helper()
	body, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(requestContext(t))
	if err != nil {
		t.Fatalf("reading /metrics of %s: %v", c.name, err)
	}
	return string(body)
}

// metricSamples returns the sample lines of metric in text whose labels include labels.
func metricSamples(text, metric string, labels map[string]string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		match := true
		for key, value := range labels {
			if !strings.Contains(line, fmt.Sprintf("%s=%q", key, value)) {
				match = false
				break
			}
		}
		if match {
			out = append(out, line)
		}
	}
	return out
}

// wantFailedOpen fails unless the audit event of the creation of ns/name records each of
// names as failed open, under an annotation key of prefix.
func wantFailedOpen(t *testing.T, c *cluster, ns, name, prefix string, names ...string) {
	t.Helper()
	var annotations map[string]string
	eventually(t, pollTimeout, "the audit event of the creation of "+ns+"/"+name, func(context.Context) (bool, error) {
		event, err := findAuditEvent(c.auditLog, ns, name)
		if err != nil || event == nil {
			return false, err
		}
		annotations = event.Annotations
		return true, nil
	})
	var failedOpen []string
	for key, value := range annotations {
		if strings.HasPrefix(key, prefix+"round_0_index_") {
			failedOpen = append(failedOpen, value)
		}
	}
	for _, want := range names {
		if !slices.Contains(failedOpen, want) {
			t.Errorf("no %sround_0_index_N audit annotation names %s (annotations: %v)", prefix, want, annotations)
		}
	}
}

// blackhole is a TCP listener on 127.0.0.1 that accepts connections and never answers, not
// even the TLS handshake, so a call to it lasts the call's whole timeout. Once it comes back
// it serves HTTPS webhooks on the same address.
type blackhole struct {
	listener net.Listener
	closed   chan struct{}
	close    func()

	mu       sync.Mutex
	accepted int
	held     []net.Conn
	// back, once set, takes the connections accepted for the webhook server.
	back chan net.Conn
}

func startBlackhole(t *testing.T) *blackhole {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{listener: listener, closed: make(chan struct{})}
	var once sync.Once
	b.close = func() {
		once.Do(func() {
			close(b.closed)
			_ = listener.Close()
			b.mu.Lock()
			defer b.mu.Unlock()
			for _, conn := range b.held {
				_ = conn.Close()
			}
			b.held = nil
		})
	}
	t.Cleanup(b.close)
	go b.serve()
	return b
}

func (b *blackhole) serve() {
	for {
		conn, err := b.listener.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.accepted++
		back := b.back
		if back == nil {
			b.held = append(b.held, conn)
		}
		b.mu.Unlock()
		if back != nil {
			select {
			case back <- conn:
			case <-b.closed:
				_ = conn.Close()
				return
			}
		}
	}
}

// connections is how many connections the endpoint has accepted.
func (b *blackhole) connections() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.accepted
}

// clientConfig reaches path on the endpoint, trusting caBundle.
func (b *blackhole) clientConfig(path string, caBundle []byte) admissionregistrationv1.WebhookClientConfig {
	url := "https://" + b.listener.Addr().String() + path
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
}

// comeBack makes the endpoint an HTTPS webhook server, with the handlers register sets: the
// connections it holds are dropped, as a restarted server's would be, and new ones served.
func (b *blackhole) comeBack(t *testing.T, e *env, register func(*webhookServer)) {
	t.Helper()
	back := make(chan net.Conn)
	s := serveWebhooks(t, e.dir, serverOptions{ca: e.ca, certName: "webhook"}, &handoffListener{b: b, conns: back})
	register(s)
	b.mu.Lock()
	b.back = back
	held := b.held
	b.held = nil
	b.mu.Unlock()
	for _, conn := range held {
		_ = conn.Close()
	}
}

// handoffListener is the blackhole's listener as the webhook server sees it once it is back.
type handoffListener struct {
	b     *blackhole
	conns chan net.Conn
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case conn := <-l.conns:
		return conn, nil
	case <-l.b.closed:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.b.close()
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.b.listener.Addr() }

// shortCircuited creates first, and returns the answer to a create the server made no call
// for: first's, when its breaker was open, or else, first having become the breaker's probe
// call (which lasts the call's timeout, and is left pending), second's, made while the probe
// is out.
func (b *blackhole) shortCircuited(t *testing.T, c *cluster, first, second *corev1.ConfigMap, pending *[]<-chan createResult) createResult {
	t.Helper()
	before := b.connections()
	done := c.createAsync(requestContext(t), first, "")
	var answer createResult
	answered := false
	eventually(t, pollTimeout, "the create of "+first.Name+" to be answered or to call the endpoint", func(context.Context) (bool, error) {
		select {
		case answer = <-done:
			answered = true
			return true, nil
		default:
			return b.connections() > before, nil
		}
	})
	if !answered {
		*pending = append(*pending, done)
		before = b.connections()
		answer = c.create(requestContext(t), second, "")
	}
	if n := b.connections(); n != before {
		t.Errorf("the server called the dead endpoint %d times for a request its breaker should have short-circuited", n-before)
	}
	return answer
}
