package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
)

// The kinds of webhook fan-out measures.
const (
	validatingKind = "validating"
	mutatingKind   = "mutating"
)

// FanOutRuns are the runs of one number of webhooks of one kind, one per repetition.
type FanOutRuns struct {
	Webhooks int
	Runs     []LoadRun
}

// FanOutResult is table 3: pod creates through N webhooks that each hold every request.
type FanOutResult struct {
	Options FanOutOptions
	// Baseline are runs without webhooks; Baseline[r] ran in repetition r, as did the r-th
	// run of every other configuration.
	Baseline []LoadRun
	// Validating and Mutating follow Options.Webhooks.
	Validating, Mutating []FanOutRuns
}

const fanOutNamespace = "bench-fan-out"

// runFanOut measures pod creates on our server through N validating webhooks and through N
// mutating webhooks for each N, and with none. Each repetition measures every configuration
// once, starting with a different one each time; each configuration's webhooks are
// registered for its own runs only.
func runFanOut(ctx context.Context, env *environment, opts FanOutOptions) (result *FanOutResult, err error) {
	dir := filepath.Join(env.workDir, "fan-out")
	etcd, err := startEtcd(ctx, env.etcdBinary, filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, etcd.stop()) }()
	server, err := startAPIServer(ctx, env.oursBinary, env.pki, filepath.Join(dir, "kube-apiserver"), etcd.clientURL)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, server.stop()) }()
	webhooks, err := startWebhookServer(filepath.Join(dir, "webhook"), opts.Hold)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, webhooks.close()) }()
	if err := loadNamespace(ctx, server.client, fanOutNamespace); err != nil {
		return nil, err
	}
	clients, err := controlplane.Clients(server.config, opts.Load.Clients)
	if err != nil {
		return nil, err
	}

	admissionAPI := server.client.AdmissionregistrationV1()
	type configuration struct {
		kind     string // "" for the baseline
		webhooks int
		runs     *[]LoadRun
		install  func(context.Context) error
		remove   func(context.Context) error
	}
	result = &FanOutResult{Options: opts}
	configs := []configuration{{runs: &result.Baseline}}
	result.Validating = make([]FanOutRuns, len(opts.Webhooks))
	result.Mutating = make([]FanOutRuns, len(opts.Webhooks))
	for i, n := range opts.Webhooks {
		result.Validating[i].Webhooks, result.Mutating[i].Webhooks = n, n
		validating, mutating := holdValidatingWebhooks(webhooks, n), holdMutatingWebhooks(webhooks, n)
		configs = append(configs,
			configuration{
				kind: validatingKind, webhooks: n, runs: &result.Validating[i].Runs,
				install: func(ctx context.Context) error {
					_, err := admissionAPI.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{})
					return err
				},
				remove: func(ctx context.Context) error {
					return admissionAPI.ValidatingWebhookConfigurations().Delete(ctx, validating.Name, metav1.DeleteOptions{})
				},
			},
			configuration{
				kind: mutatingKind, webhooks: n, runs: &result.Mutating[i].Runs,
				install: func(ctx context.Context) error {
					_, err := admissionAPI.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{})
					return err
				},
				remove: func(ctx context.Context) error {
					return admissionAPI.MutatingWebhookConfigurations().Delete(ctx, mutating.Name, metav1.DeleteOptions{})
				},
			})
	}

	for rep := range opts.Repetitions {
		for k := range configs {
			i := (rep + k) % len(configs)
			c := configs[i]
			label := "no webhooks"
			if c.kind != "" {
				label = fmt.Sprintf("%d %s", c.webhooks, c.kind)
				if err := c.install(ctx); err != nil {
					return nil, fmt.Errorf("registering %s webhooks: %w", label, err)
				}
				if err := waitForHolds(ctx, server, webhooks, c.kind, c.webhooks); err != nil {
					return nil, fmt.Errorf("%s webhooks: %w", label, err)
				}
			}
			run, err := timedCreatesThenDelete(ctx, clients, fanOutNamespace, fmt.Sprintf("config-%d-rep-%d", i, rep+1), opts.Load)
			if err != nil {
				return nil, fmt.Errorf("%s, repetition %d: %w", label, rep+1, err)
			}
			if c.kind != "" {
				if err := c.remove(ctx); err != nil {
					return nil, fmt.Errorf("removing %s webhooks: %w", label, err)
				}
				if err := waitForHolds(ctx, server, webhooks, c.kind, 0); err != nil {
					return nil, fmt.Errorf("%s webhooks: %w", label, err)
				}
			}
			env.progressf("fan-out repetition %d/%d, %s: %.0f creates/s, p50 %s, p99 %s", rep+1, opts.Repetitions, label,
				run.Throughput(), run.P50().Round(time.Microsecond), run.P99().Round(time.Microsecond))
			*c.runs = append(*c.runs, run)
		}
	}
	return result, nil
}

// maxWebhooksProbed bounds the hold paths a probe watches: more than any configuration has.
const maxWebhooksProbed = 64

// waitForHolds waits until a dry-run pod create reaches exactly the first n hold webhooks
// of kind: all of a configuration just registered, or none of one just removed.
func waitForHolds(ctx context.Context, server *apiServer, webhooks *webhookServer, kind string, n int) error {
	counts := func() []int {
		c := make([]int, maxWebhooksProbed)
		for i := range c {
			c[i] = webhooks.callCount(holdPath(kind, i))
		}
		return c
	}
	var reached []int
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, policyApplyTimeout, true, func(ctx context.Context) (bool, error) {
		before := counts()
		if err := dryRunCreate(ctx, server.client, fanOutNamespace, benchPod("probe")); err != nil {
			return false, fmt.Errorf("probing the webhooks: %w", err)
		}
		after := counts()
		reached = reached[:0]
		for i := range after {
			if after[i] > before[i] {
				reached = append(reached, i)
			}
		}
		if len(reached) != n {
			return false, nil
		}
		for i, webhook := range reached {
			if webhook != i {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("a pod create did not reach exactly %d %s webhooks within %s (the last reached %v): %w", n, kind, policyApplyTimeout, reached, err)
	}
	return nil
}
