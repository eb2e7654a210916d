package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DispatchResult is table 5: our webhook dispatch against stock's, the same webhooks and
// load on both binaries.
type DispatchResult struct {
	Options DispatchOptions
	// Overhead are the immediate-webhook runs: [server][config], per Options.Webhooks
	// validating, mutating patching and mutating without a patch.
	Overhead map[string][]DispatchConfigRuns
	// Dead are, by server, runs of creates through one unreachable Ignore webhook (its
	// objectSelector matches them) and of creates it does not match, in turn.
	Dead map[string][]AlternatingRun
	// FastDeny are the latencies of creates one webhook denies at once while seven hold.
	FastDeny map[string]*Latencies
	// Shadow are the runs, on ours, of creates through a mutating webhook in Audit (a shadow)
	// with maxWait 0s that holds every call for SlowHold, beside an enforced one that answers
	// at once, and of creates through the enforced one alone, in turn.
	Shadow []AlternatingRun
	// Warn are the runs, on ours, of creates through a validating webhook in Warn that denies
	// each after warnHold (the request waits for it: the default), and of creates it does not
	// match, in turn.
	Warn []AlternatingRun
	// Profiles are ours' and stock's CPU profiles under the largest number of patching
	// mutating webhooks.
	Profiles []DispatchProfile
	// CallAlone are, by configuration as in Overhead, a run per repetition of the calls to
	// the configuration's first webhook made alone (timeCallsAlone), less its handling.
	CallAlone [][]*Latencies
}

// DispatchConfigRuns are one configuration's runs on one server.
type DispatchConfigRuns struct {
	Kind     string
	Webhooks int
	// Runs are the creates the webhooks matched, Baseline those they did not, in turn with
	// them in the same run; one of each per repetition.
	Runs, Baseline []LoadRun
	// ServerSide are, run by run, the creates' latencies less what the webhooks spent on
	// each (their handlers' own time): the API server's side of the calls.
	ServerSide []*Latencies
}

// unpatchedMutatingKind are mutating webhooks that answer at once without a patch.
const unpatchedMutatingKind = "mutating-unpatched"

// serverSide is each create's latency less what the webhooks spent on its pod (the time
// one of them at least was handling it); every create must have reached the webhooks calls
// times.
func serverSide(run LoadRun, spent map[string]Spent, calls int) (*Latencies, error) {
	samples := make([]time.Duration, 0, len(run.ByPod))
	for name, latency := range run.ByPod {
		s := spent[name]
		if len(s.Calls) != calls {
			return nil, fmt.Errorf("pod %s reached the webhooks %d times, want %d", name, len(s.Calls), calls)
		}
		samples = append(samples, latency-s.Time())
	}
	return newLatencies(samples), nil
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
		Dead: map[string][]AlternatingRun{}, FastDeny: map[string]*Latencies{}}
	if err := measureOverhead(ctx, env, servers, webhooks, opts, result); err != nil {
		return nil, err
	}
	for _, name := range []string{oursServer, stockServer} {
		profile, err := profileDispatch(ctx, env, name, servers[name], webhooks, slices.Max(opts.Webhooks), opts.ProfileWindow, dir)
		if err != nil {
			return nil, fmt.Errorf("profiling %s: %w", name, err)
		}
		result.Profiles = append(result.Profiles, profile)
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

// AlternatingRun is one run of creates a webhook matched (its objectSelector), and of
// creates it did not, one of each in turn, so that both share the server's state and the
// machine's moments and the difference is the webhook's; for a softened webhook, what became
// of its calls in the run (portcullis_admission_webhook_shadow_calls_total's increase, by
// result).
type AlternatingRun struct {
	With, Without *Latencies
	Calls         map[string]float64
}

// AddedP99 is what the webhook added to the run's p99 latency, in seconds.
func (r AlternatingRun) AddedP99() float64 {
	return (r.With.Percentile(99) - r.Without.Percentile(99)).Seconds()
}

// AddedP50 is what the webhook added to the run's p50 latency, in seconds.
func (r AlternatingRun) AddedP50() float64 {
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
	config := immediateMutatingWebhooks(webhooks, mutatingKind, 1)
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
		run := AlternatingRun{With: with, Without: without}
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

// timeAlternatingCreates times n creates of pods with label (which a webhook matches) and
// n without, one of each in turn.
func timeAlternatingCreates(ctx context.Context, client kubernetes.Interface, prefix, label string, n int) (matched, alone *Latencies, err error) {
	with, without, err := alternatingCreates(ctx, client, prefix, label, n)
	if err != nil {
		return nil, nil, err
	}
	return with.Latencies, without.Latencies, nil
}

// alternatingCreates is timeAlternatingCreates with each create's latency by pod.
func alternatingCreates(ctx context.Context, client kubernetes.Interface, prefix, label string, n int) (matched, alone LoadRun, err error) {
	runs := [2]LoadRun{{Clients: 1, ByPod: map[string]time.Duration{}}, {Clients: 1, ByPod: map[string]time.Duration{}}}
	var samples [2][]time.Duration
	for i := range 2 * n {
		pod := benchPod(fmt.Sprintf("%s-%d-%d", prefix, i, time.Now().UnixNano()))
		side := i % 2 // 0: matched
		if side == 0 {
			pod.Labels[label] = "true"
		}
		start := time.Now()
		_, err := client.CoreV1().Pods(dispatchNamespace).Create(ctx, pod, metav1.CreateOptions{})
		took := time.Since(start)
		if err != nil {
			return LoadRun{}, LoadRun{}, fmt.Errorf("create %d of %d: %w", i+1, 2*n, err)
		}
		samples[side] = append(samples[side], took)
		runs[side].ByPod[pod.Name] = took
		runs[side].Creates++
		runs[side].Elapsed += took
	}
	for side := range runs {
		runs[side].Latencies = newLatencies(samples[side])
	}
	return runs[0], runs[1], nil
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
		run := AlternatingRun{With: with, Without: without}
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

// hookedLabel marks the pods the overhead rows' and the dead webhook's objectSelector
// matches: creates with and without it alternate, so that each run has its own baseline.
const hookedLabel = "bench.portcullis.dev/hooked"

// measureOverhead runs each configuration on every server, repetition by repetition, the
// configurations in a rotating order and the servers too. A run alternates creates the
// webhooks match with creates they do not: the second are the run's baseline.
func measureOverhead(ctx context.Context, env *environment, servers map[string]*apiServer, webhooks *webhookServer, opts DispatchOptions, result *DispatchResult) error {
	type configuration struct {
		kind     string
		webhooks int
	}
	var configs []configuration
	for _, n := range opts.Webhooks {
		configs = append(configs, configuration{validatingKind, n}, configuration{mutatingKind, n}, configuration{unpatchedMutatingKind, n})
	}
	for name := range servers {
		runs := make([]DispatchConfigRuns, len(configs))
		for i, c := range configs {
			runs[i] = DispatchConfigRuns{Kind: c.kind, Webhooks: c.webhooks}
		}
		result.Overhead[name] = runs
	}
	result.CallAlone = make([][]*Latencies, len(configs))
	order := []string{oursServer, oursDefaultServer, stockServer}
	defer webhooks.stopSpending()
	for rep := range opts.Repetitions {
		for k := range configs {
			i := (rep + k) % len(configs)
			c := configs[i]
			for s := range order {
				name := order[(rep+k+s)%len(order)]
				server := servers[name]
				label := fmt.Sprintf("%d %s", c.webhooks, c.kind)
				remove, err := installImmediate(ctx, server, webhooks, c.kind, c.webhooks, map[string]string{hookedLabel: "true"})
				if err != nil {
					return fmt.Errorf("%s: registering %s webhooks: %w", name, label, err)
				}
				prefix := fmt.Sprintf("overhead-%d-rep-%d", i, rep+1)
				if _, _, err := alternatingCreates(ctx, server.client, prefix+"-warm-up", hookedLabel, opts.Load.WarmUp); err != nil {
					return fmt.Errorf("%s, %s, repetition %d, warm-up: %w", name, label, rep+1, err)
				}
				webhooks.takeSpent()
				with, without, err := alternatingCreates(ctx, server.client, prefix, hookedLabel, opts.Load.Creates)
				if err != nil {
					return fmt.Errorf("%s, %s, repetition %d: %w", name, label, rep+1, err)
				}
				side, err := serverSide(with, webhooks.takeSpent(), c.webhooks)
				if err != nil {
					return fmt.Errorf("%s, %s, repetition %d: %w", name, label, rep+1, err)
				}
				if err := remove(ctx); err != nil {
					return fmt.Errorf("%s: removing %s webhooks: %w", name, label, err)
				}
				if err := deleteLoadPods(ctx, server.client, dispatchNamespace); err != nil {
					return err
				}
				env.progressf("dispatch repetition %d/%d, %s, %s: p50 %s (%s at the API server), %s without them", rep+1, opts.Repetitions, name, label,
					with.P50().Round(time.Microsecond), side.Percentile(50).Round(time.Microsecond), without.P50().Round(time.Microsecond))
				runs := &result.Overhead[name][i]
				runs.Runs, runs.Baseline, runs.ServerSide = append(runs.Runs, with), append(runs.Baseline, without), append(runs.ServerSide, side)
			}
			first := immediatePath(c.kind, 0)
			review, err := webhooks.reviewSent(first)
			if err != nil {
				return err
			}
			alone, err := timeCallsAlone(ctx, webhooks, first, review, opts.Load.Creates)
			if err != nil {
				return fmt.Errorf("%d %s, repetition %d, the call alone: %w", c.webhooks, c.kind, rep+1, err)
			}
			env.progressf("dispatch repetition %d/%d, %d %s: the call alone %s", rep+1, opts.Repetitions, c.webhooks, c.kind, alone.Percentile(50).Round(time.Microsecond))
			result.CallAlone[i] = append(result.CallAlone[i], alone)
		}
	}
	return nil
}

// installImmediate registers n webhooks of kind that answer at once, matching the pods
// that carry labels (every pod when labels is nil), and waits until a create reaches all of
// them; the returned function removes them and waits until none is reached.
func installImmediate(ctx context.Context, server *apiServer, webhooks *webhookServer, kind string, n int, labels map[string]string) (func(context.Context) error, error) {
	api := server.client.AdmissionregistrationV1()
	var selector *metav1.LabelSelector
	if labels != nil {
		selector = &metav1.LabelSelector{MatchLabels: labels}
	}
	var remove func(context.Context) error
	if kind == validatingKind {
		config := immediateValidatingWebhooks(webhooks, n)
		for i := range config.Webhooks {
			config.Webhooks[i].ObjectSelector = selector
		}
		if _, err := api.ValidatingWebhookConfigurations().Create(ctx, config, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		remove = func(ctx context.Context) error {
			return api.ValidatingWebhookConfigurations().Delete(ctx, config.Name, metav1.DeleteOptions{})
		}
	} else {
		config := immediateMutatingWebhooks(webhooks, kind, n)
		for i := range config.Webhooks {
			config.Webhooks[i].ObjectSelector = selector
		}
		if _, err := api.MutatingWebhookConfigurations().Create(ctx, config, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		remove = func(ctx context.Context) error {
			return api.MutatingWebhookConfigurations().Delete(ctx, config.Name, metav1.DeleteOptions{})
		}
	}
	if err := waitForCalls(ctx, server, webhooks, immediatePath(kind, n-1), labels, true); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		if err := remove(ctx); err != nil {
			return err
		}
		return waitForCalls(ctx, server, webhooks, immediatePath(kind, n-1), labels, false)
	}, nil
}

// waitForCalls waits until a dry-run create of a pod with labels reaches path (reached) or
// does not.
func waitForCalls(ctx context.Context, server *apiServer, webhooks *webhookServer, path string, labels map[string]string, reached bool) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, policyApplyTimeout, true, func(ctx context.Context) (bool, error) {
		before := webhooks.callCount(path)
		probe := benchPod("probe")
		maps.Copy(probe.Labels, labels)
		if err := dryRunCreate(ctx, server.client, dispatchNamespace, probe); err != nil {
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
// answers, and creates it does not match (its objectSelector), in turn: on ours once its
// breaker is open, a run per repetition; on stock, which pays the timeout, one short run.
func measureDead(ctx context.Context, env *environment, name string, server *apiServer, blackhole *blackhole, opts DispatchOptions, result *DispatchResult) (err error) {
	// Every create through an open breaker carries a warning; client-go's default handler
	// logs each one, which is the harness's time, not the server's.
	config := rest.CopyConfig(server.config)
	config.WarningHandler = rest.NoWarnings{}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	creates, runs := opts.DeadCreates, opts.Repetitions
	if name == stockServer {
		creates, runs = opts.StockDeadCreates, 1
	}
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
		if _, _, err := timeAlternatingCreates(ctx, client, "dead-probe", hookedLabel, 1); err != nil {
			return false, err
		}
		return blackhole.accepted() > before, nil
	}); err != nil {
		return fmt.Errorf("the dead webhook was never called: %w", err)
	}
	if name == oursServer {
		if _, _, err := timeAlternatingCreates(ctx, client, "dead-open", hookedLabel, 10); err != nil {
			return err
		}
	}
	for run := range runs {
		env.progressf("dispatch, %s: %d creates through a dead webhook (timeoutSeconds %d), %d it does not match, in turn (%d/%d)", name, creates, opts.DeadTimeoutSeconds, creates, run+1, runs)
		with, without, err := timeAlternatingCreates(ctx, client, fmt.Sprintf("dead-%s-%d", name, run), hookedLabel, creates)
		if err != nil {
			return err
		}
		result.Dead[name] = append(result.Dead[name], AlternatingRun{With: with, Without: without})
		if err := deleteLoadPods(ctx, client, dispatchNamespace); err != nil {
			return err
		}
	}
	return nil
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

// immediateMutatingWebhooks are n webhooks of kind (mutatingKind: each patches;
// unpatchedMutatingKind: none does) that answer at once.
func immediateMutatingWebhooks(server *webhookServer, kind string, n int) *admissionregistrationv1.MutatingWebhookConfiguration {
	config := holdMutatingWebhooks(server, n)
	config.Name = fmt.Sprintf("bench-immediate-%s-%d", kind, n)
	for i := range config.Webhooks {
		config.Webhooks[i].Name = fmt.Sprintf("immediate-%d.%s.bench.portcullis.dev", i, kind)
		config.Webhooks[i].ClientConfig = server.clientConfig(immediatePath(kind, i))
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
		ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{hookedLabel: "true"}},
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
