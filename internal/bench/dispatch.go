package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
)

// DispatchResult is table 5: our webhook dispatch against stock's, the same webhooks and
// load on both binaries.
type DispatchResult struct {
	Options DispatchOptions
	// Overhead are the immediate-webhook runs: [server][config] with config 0 the baseline
	// and then, per Options.Webhooks, validating then mutating; one run per repetition.
	Overhead map[string][]DispatchConfigRuns
	// Dead are the create latencies through one unreachable Ignore webhook; DeadBaseline
	// without it, on the same server.
	Dead, DeadBaseline map[string]*Latencies
	// FastDeny are the latencies of creates one webhook denies at once while seven hold.
	FastDeny map[string]*Latencies
	// Shadow are the runs, on ours, of creates through a mutating webhook in Audit (a shadow)
	// with maxWait 0s that holds every call for SlowHold, beside an enforced one that answers
	// at once, and of creates through the enforced one alone, in turn.
	Shadow []ShadowRun
	// Warn are the runs, on ours, of creates through a validating webhook in Warn that denies
	// each after warnHold (the request waits for it: the default), and of creates it does not
	// match, in turn.
	Warn []ShadowRun
}

// DispatchConfigRuns are one configuration's runs on one server.
type DispatchConfigRuns struct {
	Kind     string // "" for the baseline
	Webhooks int
	Runs     []LoadRun
}

// The servers of table 5: ours with our dispatch configured, ours with no configuration
// (upstream's webhook plugins, which must equal stock within noise), and stock.
const (
	oursServer        = "ours"
	oursDefaultServer = "ours, no settings"
	stockServer       = "stock"
)

const dispatchNamespace = "bench-dispatch"

// dispatchConfig is the admission configuration our server runs with in table 5: our
// dispatch with breakers and budget on, at their documented defaults, and the validating
// early exit.
const dispatchConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: Portcullis
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: PortcullisConfiguration
    webhookDispatch:
      mutating:
        circuitBreaker: {}
        timeBudget: {}
        enforcementModes:
        - {configuration: bench-shadow, webhook: shadow.bench.portcullis.dev, modes: [Audit], maxWait: 0s}
      validating:
        circuitBreaker: {}
        timeBudget: {}
        earlyExit: true
        enforcementModes:
        - {configuration: bench-warn, webhook: warn.bench.portcullis.dev, modes: [Warn]}
`

// runDispatch measures, on our binary and stock's (one etcd, two prefixes):
//   - the overhead per webhook of N webhooks that answer at once (mutating ones each add an
//     annotation, so the object changes at every step);
//   - the latency of creates through one Ignore webhook whose endpoint accepts connections
//     and never answers: ours once its breaker is open, stock paying the timeout;
//   - creates one validating webhook denies at once while seven others hold every call.
func runDispatch(ctx context.Context, env *environment, opts DispatchOptions) (result *DispatchResult, err error) {
	dir := filepath.Join(env.workDir, "dispatch")
	etcd, err := startEtcd(ctx, env.etcdBinary, filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, etcd.stop()) }()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	configFile := filepath.Join(dir, "admission-config.yaml")
	if err := os.WriteFile(configFile, []byte(dispatchConfig), 0o600); err != nil {
		return nil, err
	}
	servers := map[string]*apiServer{}
	for i, s := range []struct{ name, binary string }{{oursServer, env.oursBinary}, {oursDefaultServer, env.oursBinary}, {stockServer, env.stockBinary}} {
		flags := []string{fmt.Sprintf("--etcd-prefix=/server-%d", i)}
		if s.name == oursServer {
			flags = append(flags, "--admission-control-config-file="+configFile)
		}
		server, err := startAPIServer(ctx, s.binary, env.pki, filepath.Join(dir, fmt.Sprintf("server-%d", i)), etcd.clientURL, flags...)
		if err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, server.stop()) }()
		if err := loadNamespace(ctx, server.client, dispatchNamespace); err != nil {
			return nil, err
		}
		servers[s.name] = server
	}
	webhooks, err := startWebhookServer(filepath.Join(dir, "webhook"), opts.SlowHold)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, webhooks.close()) }()
	blackhole, err := startBlackhole()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, blackhole.close()) }()

	result = &DispatchResult{Options: opts, Overhead: map[string][]DispatchConfigRuns{},
		Dead: map[string]*Latencies{}, DeadBaseline: map[string]*Latencies{}, FastDeny: map[string]*Latencies{}}
	if err := measureOverhead(ctx, env, servers, webhooks, opts, result); err != nil {
		return nil, err
	}
	for _, name := range []string{oursServer, stockServer} {
		if err := measureDead(ctx, env, name, servers[name], blackhole, opts, result); err != nil {
			return nil, fmt.Errorf("dead webhook, %s: %w", name, err)
		}
		if err := measureFastDeny(ctx, env, name, servers[name], webhooks, opts, result); err != nil {
			return nil, fmt.Errorf("fast deny among slow webhooks, %s: %w", name, err)
		}
	}
	if err := measureShadow(ctx, env, servers[oursServer], webhooks, opts, result); err != nil {
		return nil, fmt.Errorf("shadow webhook, ours: %w", err)
	}
	if err := measureWarn(ctx, env, servers[oursServer], webhooks, opts, result); err != nil {
		return nil, fmt.Errorf("webhook in Warn, ours: %w", err)
	}
	return result, nil
}

// ShadowRun is one run of a softened webhook's case: the creates it matched, and those it
// did not, one of each in turn, and what became of its calls in the run
// (portcullis_admission_webhook_shadow_calls_total's increase, by result).
type ShadowRun struct {
	With, Without *Latencies
	Calls         map[string]float64
}

// AddedP99 is what the webhook added to the run's p99 latency, in seconds.
func (r ShadowRun) AddedP99() float64 {
	return (r.With.Percentile(99) - r.Without.Percentile(99)).Seconds()
}

// AddedP50 is what the webhook added to the run's p50 latency, in seconds.
func (r ShadowRun) AddedP50() float64 {
	return (r.With.Percentile(50) - r.Without.Percentile(50)).Seconds()
}

// shadowedLabel marks the pods the shadow webhook matches (its objectSelector): creates with
// and without it alternate, so both populations share the server's state and the machine's
// moments, and the difference is the shadow's.
const shadowedLabel = "bench.portcullis.dev/shadowed"

// measureShadow times creates through an enforced mutating webhook that answers at once,
// with and without a shadow (enforcement mode Audit) before it that holds every call for
// SlowHold, one create of each in turn: the shadow's added latency.
func measureShadow(ctx context.Context, env *environment, server *apiServer, webhooks *webhookServer, opts DispatchOptions, result *DispatchResult) (err error) {
	api := server.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	config := immediateMutatingWebhooks(webhooks, 1)
	config.Name = "bench-shadow"
	shadow := holdMutatingWebhooks(webhooks, 1).Webhooks[0]
	shadow.Name = shadowWebhook
	shadow.ClientConfig = webhooks.clientConfig(holdPath("shadow", 0))
	shadow.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{shadowedLabel: "true"}}
	config.Webhooks = append([]admissionregistrationv1.MutatingWebhook{shadow}, config.Webhooks...)
	if _, err := api.Create(ctx, config, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, api.Delete(context.WithoutCancel(ctx), config.Name, metav1.DeleteOptions{}))
	}()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, policyApplyTimeout, true, func(ctx context.Context) (bool, error) {
		before := webhooks.callCount(immediatePath(mutatingKind, 0))
		if _, _, err := timeAlternatingCreates(ctx, server.client, "shadow-probe", shadowedLabel, 1); err != nil {
			return false, err
		}
		return webhooks.callCount(holdPath("shadow", 0)) > 0 && webhooks.callCount(immediatePath(mutatingKind, 0)) >= before+2, nil
	}); err != nil {
		return fmt.Errorf("the shadow and the enforced webhook were never both called: %w", err)
	}
	// p99 of a thousand creates is the tenth slowest: runs are repeated, and the median
	// taken, so that one unlucky moment of the machine is not read as the shadow's cost.
	for rep := range opts.Repetitions {
		before, err := shadowCalls(ctx, server.client, shadowWebhook)
		if err != nil {
			return err
		}
		with, without, err := timeAlternatingCreates(ctx, server.client, fmt.Sprintf("shadow-%d", rep), shadowedLabel, opts.DeadCreates)
		if err != nil {
			return err
		}
		run := ShadowRun{With: with, Without: without}
		if run.Calls, err = endedShadowCalls(ctx, server.client, shadowWebhook, before, opts.DeadCreates, opts.SlowHold); err != nil {
			return err
		}
		result.Shadow = append(result.Shadow, run)
		env.progressf("dispatch repetition %d/%d, ours: %d creates through a %s shadow and an immediate enforced webhook, %d through the enforced one alone, in turn: p99 %s and %s",
			rep+1, opts.Repetitions, opts.DeadCreates, opts.SlowHold, opts.DeadCreates, with.Percentile(99).Round(time.Microsecond), without.Percentile(99).Round(time.Microsecond))
		if err := deleteLoadPods(ctx, server.client, dispatchNamespace); err != nil {
			return err
		}
	}
	return nil
}

// timeAlternatingCreates times n creates of pods with label (which a softened webhook
// matches) and n without, one of each in turn.
func timeAlternatingCreates(ctx context.Context, client kubernetes.Interface, prefix, label string, n int) (matched, alone *Latencies, err error) {
	var with, without []time.Duration
	for i := range 2 * n {
		pod := benchPod(fmt.Sprintf("%s-%d-%d", prefix, i, time.Now().UnixNano()))
		if i%2 == 0 {
			pod.Labels[label] = "true"
		}
		start := time.Now()
		_, err := client.CoreV1().Pods(dispatchNamespace).Create(ctx, pod, metav1.CreateOptions{})
		took := time.Since(start)
		if err != nil {
			return nil, nil, fmt.Errorf("create %d of %d: %w", i+1, 2*n, err)
		}
		if i%2 == 0 {
			with = append(with, took)
		} else {
			without = append(without, took)
		}
	}
	return newLatencies(with), newLatencies(without), nil
}

// The softened webhooks of table 5, named in dispatchConfig.
const (
	shadowWebhook = "shadow.bench.portcullis.dev"
	warnWebhook   = "warn.bench.portcullis.dev"
	// warnedLabel marks the pods the Warn webhook matches.
	warnedLabel = "bench.portcullis.dev/warned"
)

// measureWarn times creates a validating webhook in Warn denies after warnHold (with the
// default wait: the request waits for its verdict, to warn), and creates it does not match,
// one of each in turn: what the wait costs.
func measureWarn(ctx context.Context, env *environment, server *apiServer, webhooks *webhookServer, opts DispatchOptions, result *DispatchResult) (err error) {
	api := server.client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	hook := validatingWebhook(warnWebhook, webhooks.clientConfig(warnDenyPath), podCreateRules())
	hook.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{warnedLabel: "true"}}
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bench-warn"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{hook}}
	if _, err := api.Create(ctx, config, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, api.Delete(context.WithoutCancel(ctx), config.Name, metav1.DeleteOptions{}))
	}()
	// The warnings are the point, not the bench's output.
	quiet := rest.CopyConfig(server.config)
	quiet.WarningHandler = rest.NoWarnings{}
	client, err := kubernetes.NewForConfig(quiet)
	if err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, policyApplyTimeout, true, func(ctx context.Context) (bool, error) {
		if _, _, err := timeAlternatingCreates(ctx, client, "warn-probe", warnedLabel, 1); err != nil {
			return false, err
		}
		return webhooks.callCount(warnDenyPath) > 0, nil
	}); err != nil {
		return fmt.Errorf("the Warn webhook was never called: %w", err)
	}
	for rep := range opts.Repetitions {
		before, err := shadowCalls(ctx, client, warnWebhook)
		if err != nil {
			return err
		}
		with, without, err := timeAlternatingCreates(ctx, client, fmt.Sprintf("warn-%d", rep), warnedLabel, opts.DeadCreates)
		if err != nil {
			return err
		}
		run := ShadowRun{With: with, Without: without}
		if run.Calls, err = shadowCallsSince(ctx, client, warnWebhook, before); err != nil {
			return err
		}
		result.Warn = append(result.Warn, run)
		env.progressf("dispatch repetition %d/%d, ours: %d creates a %s webhook in Warn denies, %d it does not match, in turn: p50 %s and %s",
			rep+1, opts.Repetitions, opts.DeadCreates, warnHold, opts.DeadCreates, with.Percentile(50).Round(time.Microsecond), without.Percentile(50).Round(time.Microsecond))
		if err := deleteLoadPods(ctx, client, dispatchNamespace); err != nil {
			return err
		}
	}
	return nil
}

// shadowCalls reads the server's portcullis_admission_webhook_shadow_calls_total of webhook,
// by result.
func shadowCalls(ctx context.Context, client kubernetes.Interface, webhook string) (map[string]float64, error) {
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	calls := map[string]float64{}
	prefix := "portcullis_admission_webhook_shadow_calls_total{"
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, prefix) || !strings.Contains(line, `name="`+webhook+`"`) {
			continue
		}
		i := strings.Index(line, `result="`)
		j := strings.LastIndexByte(line, ' ')
		if i < 0 || j < 0 {
			continue
		}
		result := line[i+len(`result="`):]
		result = result[:strings.IndexByte(result, '"')]
		v, err := strconv.ParseFloat(line[j+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		calls[result] += v
	}
	return calls, nil
}

// shadowCallsSince is shadowCalls' increase since before.
func shadowCallsSince(ctx context.Context, client kubernetes.Interface, webhook string, before map[string]float64) (map[string]float64, error) {
	after, err := shadowCalls(ctx, client, webhook)
	if err != nil {
		return nil, err
	}
	for result, v := range before {
		after[result] -= v
	}
	return after, nil
}

// endedShadowCalls is shadowCallsSince once the calls of at least creates creates have
// ended (each is counted when it ends: a call holding hold is counted that much after its
// create), waiting at most hold and a margin for them.
func endedShadowCalls(ctx context.Context, client kubernetes.Interface, webhook string, before map[string]float64, creates int, hold time.Duration) (map[string]float64, error) {
	var calls map[string]float64
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, hold+policyApplyTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if calls, err = shadowCallsSince(ctx, client, webhook, before); err != nil {
			return false, err
		}
		var ended float64
		for _, v := range calls {
			ended += v
		}
		return ended >= float64(creates), nil
	})
	if err != nil {
		return nil, fmt.Errorf("the shadow's calls of %d creates ending within %s: %w", creates, hold+policyApplyTimeout, err)
	}
	return calls, nil
}

// measureOverhead runs each configuration on both servers, repetition by repetition, the
// configurations in a rotating order and the servers alternating which goes first.
func measureOverhead(ctx context.Context, env *environment, servers map[string]*apiServer, webhooks *webhookServer, opts DispatchOptions, result *DispatchResult) error {
	type configuration struct {
		kind     string
		webhooks int
	}
	configs := []configuration{{}}
	for _, n := range opts.Webhooks {
		configs = append(configs, configuration{validatingKind, n}, configuration{mutatingKind, n})
	}
	clients := map[string][]kubernetes.Interface{}
	for name, server := range servers {
		c, err := controlplane.Clients(server.config, opts.Load.Clients)
		if err != nil {
			return err
		}
		clients[name] = c
		runs := make([]DispatchConfigRuns, len(configs))
		for i, c := range configs {
			runs[i] = DispatchConfigRuns{Kind: c.kind, Webhooks: c.webhooks}
		}
		result.Overhead[name] = runs
	}
	order := []string{oursServer, oursDefaultServer, stockServer}
	for rep := range opts.Repetitions {
		for k := range configs {
			i := (rep + k) % len(configs)
			c := configs[i]
			for s := range order {
				name := order[(rep+k+s)%len(order)]
				server := servers[name]
				label := "no webhooks"
				var remove func(context.Context) error
				if c.kind != "" {
					label = fmt.Sprintf("%d %s", c.webhooks, c.kind)
					var err error
					if remove, err = installImmediate(ctx, server, webhooks, c.kind, c.webhooks); err != nil {
						return fmt.Errorf("%s: registering %s webhooks: %w", name, label, err)
					}
				}
				run, err := timedCreatesThenDelete(ctx, clients[name], dispatchNamespace, fmt.Sprintf("overhead-%d-rep-%d", i, rep+1), opts.Load)
				if err != nil {
					return fmt.Errorf("%s, %s, repetition %d: %w", name, label, rep+1, err)
				}
				if remove != nil {
					if err := remove(ctx); err != nil {
						return fmt.Errorf("%s: removing %s webhooks: %w", name, label, err)
					}
				}
				env.progressf("dispatch repetition %d/%d, %s, %s: p50 %s", rep+1, opts.Repetitions, name, label, run.P50().Round(time.Microsecond))
				result.Overhead[name][i].Runs = append(result.Overhead[name][i].Runs, run)
			}
		}
	}
	return nil
}

// installImmediate registers n webhooks of kind that answer at once and waits until a
// create reaches all of them; the returned function removes them and waits until none is
// reached.
func installImmediate(ctx context.Context, server *apiServer, webhooks *webhookServer, kind string, n int) (func(context.Context) error, error) {
	api := server.client.AdmissionregistrationV1()
	var remove func(context.Context) error
	if kind == validatingKind {
		config := immediateValidatingWebhooks(webhooks, n)
		if _, err := api.ValidatingWebhookConfigurations().Create(ctx, config, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		remove = func(ctx context.Context) error {
			return api.ValidatingWebhookConfigurations().Delete(ctx, config.Name, metav1.DeleteOptions{})
		}
	} else {
		config := immediateMutatingWebhooks(webhooks, n)
		if _, err := api.MutatingWebhookConfigurations().Create(ctx, config, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		remove = func(ctx context.Context) error {
			return api.MutatingWebhookConfigurations().Delete(ctx, config.Name, metav1.DeleteOptions{})
		}
	}
	if err := waitForCalls(ctx, server, webhooks, immediatePath(kind, n-1), true); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		if err := remove(ctx); err != nil {
			return err
		}
		return waitForCalls(ctx, server, webhooks, immediatePath(kind, n-1), false)
	}, nil
}

// waitForCalls waits until a dry-run create reaches path (reached) or does not.
func waitForCalls(ctx context.Context, server *apiServer, webhooks *webhookServer, path string, reached bool) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, policyApplyTimeout, true, func(ctx context.Context) (bool, error) {
		before := webhooks.callCount(path)
		if err := dryRunCreate(ctx, server.client, dispatchNamespace, benchPod("probe")); err != nil {
			return false, fmt.Errorf("probing the webhooks: %w", err)
		}
		return (webhooks.callCount(path) > before) == reached, nil
	})
	if err != nil {
		return fmt.Errorf("a create reaching %s (%t) within %s: %w", path, reached, policyApplyTimeout, err)
	}
	return nil
}

// measureDead times creates through one Ignore mutating webhook whose endpoint never
// answers, after creates without it.
func measureDead(ctx context.Context, env *environment, name string, server *apiServer, blackhole *blackhole, opts DispatchOptions, result *DispatchResult) (err error) {
	// Every create through an open breaker carries a warning; client-go's default handler
	// logs each one, which is the harness's time, not the server's.
	config := rest.CopyConfig(server.config)
	config.WarningHandler = rest.NoWarnings{}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	creates := opts.DeadCreates
	if name == stockServer {
		creates = opts.StockDeadCreates
	}
	baseline, err := timeCreates(ctx, client, fmt.Sprintf("dead-baseline-%s", name), creates, false)
	if err != nil {
		return err
	}
	result.DeadBaseline[name] = baseline
	dead := deadWebhook(blackhole, opts.DeadTimeoutSeconds)
	api := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := api.Create(ctx, dead, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, api.Delete(context.WithoutCancel(ctx), dead.Name, metav1.DeleteOptions{}))
	}()
	// In force once a create waits for it; on ours, the failed calls that follow open the
	// breaker (threshold calls, each its timeout).
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, policyApplyTimeout, true, func(ctx context.Context) (bool, error) {
		before := blackhole.accepted()
		if _, err := timeCreates(ctx, client, "dead-probe", 1, false); err != nil {
			return false, err
		}
		return blackhole.accepted() > before, nil
	}); err != nil {
		return fmt.Errorf("the dead webhook was never called: %w", err)
	}
	if name == oursServer {
		for i := 0; i < 10; i++ {
			if _, err := timeCreates(ctx, client, "dead-open", 1, false); err != nil {
				return err
			}
		}
	}
	env.progressf("dispatch, %s: %d creates through a dead webhook (timeoutSeconds %d)", name, creates, opts.DeadTimeoutSeconds)
	latencies, err := timeCreates(ctx, client, fmt.Sprintf("dead-%s", name), creates, false)
	if err != nil {
		return err
	}
	result.Dead[name] = latencies
	return deleteLoadPods(ctx, client, dispatchNamespace)
}

// measureFastDeny times creates that one validating webhook denies at once while seven
// others hold every call for the webhook server's hold.
func measureFastDeny(ctx context.Context, env *environment, name string, server *apiServer, webhooks *webhookServer, opts DispatchOptions, result *DispatchResult) (err error) {
	config := fastDenyWebhooks(webhooks)
	api := server.client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := api.Create(ctx, config, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, api.Delete(context.WithoutCancel(ctx), config.Name, metav1.DeleteOptions{}))
	}()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, policyApplyTimeout, true, func(ctx context.Context) (bool, error) {
		before := webhooks.callCount(denyPath)
		_ = dryRunCreate(ctx, server.client, dispatchNamespace, benchPod("probe"))
		return webhooks.callCount(denyPath) > before, nil
	}); err != nil {
		return fmt.Errorf("the denying webhook was never called: %w", err)
	}
	env.progressf("dispatch, %s: %d creates denied among %d webhooks holding %s", name, opts.SlowCreates, slowWebhooks, opts.SlowHold)
	denied, err := timeCreates(ctx, server.client, "fast-deny", opts.SlowCreates, true)
	if err != nil {
		return err
	}
	result.FastDeny[name] = denied
	return nil
}

// timeCreates sends n creates, one after another, and returns their latencies; each must
// succeed, or be refused when refused is set.
func timeCreates(ctx context.Context, client kubernetes.Interface, prefix string, n int, refused bool) (*Latencies, error) {
	var samples []time.Duration
	for i := range n {
		start := time.Now()
		_, err := client.CoreV1().Pods(dispatchNamespace).Create(ctx, benchPod(fmt.Sprintf("%s-%d-%d", prefix, i, start.UnixNano())), metav1.CreateOptions{})
		samples = append(samples, time.Since(start))
		if refused != (err != nil) {
			return nil, fmt.Errorf("create %d of %d: refused %t, want %t (error: %v)", i+1, n, err != nil, refused, err)
		}
	}
	return newLatencies(samples), nil
}

// slowWebhooks is how many webhooks hold every call in the fast-deny case.
const slowWebhooks = 7

func fastDenyWebhooks(server *webhookServer) *admissionregistrationv1.ValidatingWebhookConfiguration {
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bench-fast-deny"}}
	for i := range slowWebhooks {
		config.Webhooks = append(config.Webhooks, validatingWebhook(fmt.Sprintf("slow-%d.bench.portcullis.dev", i),
			server.clientConfig(holdPath("slow", i)), podCreateRules()))
	}
	config.Webhooks = append(config.Webhooks, validatingWebhook("deny.bench.portcullis.dev", server.clientConfig(denyPath), podCreateRules()))
	return config
}

func immediateValidatingWebhooks(server *webhookServer, n int) *admissionregistrationv1.ValidatingWebhookConfiguration {
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-immediate-validating-%d", n)}}
	for i := range n {
		config.Webhooks = append(config.Webhooks, validatingWebhook(fmt.Sprintf("immediate-%d.validating.bench.portcullis.dev", i),
			server.clientConfig(immediatePath(validatingKind, i)), podCreateRules()))
	}
	return config
}

func immediateMutatingWebhooks(server *webhookServer, n int) *admissionregistrationv1.MutatingWebhookConfiguration {
	config := holdMutatingWebhooks(server, n)
	config.Name = fmt.Sprintf("bench-immediate-mutating-%d", n)
	for i := range config.Webhooks {
		config.Webhooks[i].Name = fmt.Sprintf("immediate-%d.mutating.bench.portcullis.dev", i)
		config.Webhooks[i].ClientConfig = server.clientConfig(immediatePath(mutatingKind, i))
	}
	return config
}

// deadWebhook is one Ignore mutating webhook for pod creates at an endpoint that never
// answers.
func deadWebhook(b *blackhole, timeoutSeconds int32) *admissionregistrationv1.MutatingWebhookConfiguration {
	config := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bench-dead"}}
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://" + b.addr + "/dead"
	config.Webhooks = []admissionregistrationv1.MutatingWebhook{{
		Name:                    "dead.bench.portcullis.dev",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
		Rules:                   podCreateRules(),
		FailurePolicy:           &ignore,
		SideEffects:             &none,
		TimeoutSeconds:          &timeoutSeconds,
		AdmissionReviewVersions: []string{"v1"},
	}}
	return config
}

// blackhole accepts TCP connections on 127.0.0.1 and never answers on them: a webhook whose
// pods are gone behind a proxy that still accepts, or a hung server.
type blackhole struct {
	addr     string
	listener net.Listener

	mu    sync.Mutex
	conns []net.Conn
}

func startBlackhole() (*blackhole, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &blackhole{addr: listener.Addr().String(), listener: listener}
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, conn)
			b.mu.Unlock()
		}
	}()
	return b, nil
}

// accepted is how many connections the blackhole has taken.
func (b *blackhole) accepted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

func (b *blackhole) close() error {
	err := b.listener.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		_ = c.Close()
	}
	return err
}
