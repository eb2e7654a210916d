// Package bench measures Portcullis's kube-apiserver side by side with stock kube-apiserver,
// and its compiled-in admission plugins against the same policy written as a
// ValidatingAdmissionPolicy and as a webhook. It runs the built binaries as processes on
// loopback, loads them with client-go, and renders docs/benchmarks.md. `make bench` runs it
// at full size; an integration test runs it at a tiny size.
package bench

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Options say what to run and how much.
type Options struct {
	// BinDir holds kube-apiserver (ours), kube-apiserver-stock and etcd.
	BinDir string
	// RepoRoot is the module's root, where the plugins' Go benchmarks run.
	RepoRoot string
	// WorkDir receives PKI, etcd data and every server's log. It must exist.
	WorkDir string
	// GoTool is the go command that runs the plugins' benchmarks.
	GoTool string
	// Progress receives a line per step; nil discards them.
	Progress io.Writer

	DropIn   DropInOptions
	Policy   PolicyOptions
	FanOut   FanOutOptions
	Plugins  PluginOptions
	Dispatch DispatchOptions
	// OnlyDispatch runs table 5 alone: for working on the dispatch, not for docs/benchmarks.md.
	OnlyDispatch bool
	// BuildCost says whether table 1 measures what the PGO profile costs the build: two
	// builds of our binary from an empty cache, several minutes each.
	BuildCost bool
}

// LoadOptions size the pod-create load of one run.
type LoadOptions struct {
	// Creates is how many pod creates each run times.
	Creates int
	// WarmUp is how many creates precede each timed run, untimed: new connections, the
	// servers' lazily built caches and the webhooks' first handshakes stay out of the figures.
	WarmUp int
	// Clients is how many clients create concurrently, each on its own connection.
	Clients int
	// Timeout bounds each run; a run that reaches it fails.
	Timeout time.Duration
}

// DropInOptions size table 1: ours against stock.
type DropInOptions struct {
	// Starts is how many times each binary is started, alternating.
	Starts int
	Load   LoadOptions
	// ListPods is how many pods the timed LISTs return; Lists how many are timed per start.
	ListPods, Lists int
	// Watchers is how many watches the fan-out opens; WatchCreates how many pods it creates.
	Watchers, WatchCreates int
}

// PolicyOptions size table 2: one policy three ways.
type PolicyOptions struct {
	// Repetitions is how many times each configuration is measured, interleaved.
	Repetitions int
	Load        LoadOptions
}

// FanOutOptions size table 3: webhook fan-out.
type FanOutOptions struct {
	// Webhooks are the numbers of webhooks to measure, each as validating and as mutating.
	Webhooks []int
	// Hold is how long every webhook keeps each request.
	Hold time.Duration
	// Repetitions is how many times each configuration is measured, interleaved.
	Repetitions int
	Load        LoadOptions
}

// DispatchOptions size table 5: our webhook dispatch against stock's.
type DispatchOptions struct {
	// Webhooks are the numbers of immediate webhooks the overhead rows measure, each as
	// validating and as mutating.
	Webhooks []int
	// Repetitions is how many times each overhead configuration is measured per server.
	Repetitions int
	// Load sizes each overhead run: Creates of each kind (matched and baseline) from one
	// client, as in table 3 (Clients is not read).
	Load LoadOptions
	// DeadTimeoutSeconds is the dead webhook's timeoutSeconds; DeadCreates and
	// StockDeadCreates are how many creates are timed through it on ours and on stock
	// (where each takes the timeout).
	DeadTimeoutSeconds            int32
	DeadCreates, StockDeadCreates int
	// SlowHold is how long the seven slow webhooks of the fast-deny case hold each call;
	// SlowCreates are timed on each server.
	SlowHold    time.Duration
	SlowCreates int
	// ProfileWindow is how long ours and stock are profiled under the most mutating webhooks.
	ProfileWindow time.Duration
}

// PluginOptions size table 4: the plugins' Go benchmarks.
type PluginOptions struct {
	// Count is go test's -count: how many times each benchmark runs.
	Count int
	// BenchTime is go test's -benchtime, e.g. "1s" or "100x".
	BenchTime string
}

// DefaultOptions are `make bench`'s sizes: the whole run, builds included, takes about 50
// minutes on two cores.
func DefaultOptions() Options {
	return Options{
		GoTool: "go",
		DropIn: DropInOptions{
			Starts:   5,
			Load:     LoadOptions{Creates: 2000, WarmUp: 100, Clients: 8, Timeout: 5 * time.Minute},
			ListPods: 5000, Lists: 20,
			Watchers: 100, WatchCreates: 500,
		},
		Policy: PolicyOptions{
			Repetitions: 5,
			Load:        LoadOptions{Creates: 2000, WarmUp: 100, Clients: 8, Timeout: 5 * time.Minute},
		},
		FanOut: FanOutOptions{
			Webhooks:    []int{1, 2, 4, 8},
			Hold:        20 * time.Millisecond,
			Repetitions: 3,
			// One client: at saturation a request's latency is mostly queueing, which the
			// holds relieve, and the difference from the baseline would not be the webhooks'.
			Load: LoadOptions{Creates: 100, WarmUp: 10, Clients: 1, Timeout: 5 * time.Minute},
		},
		Plugins:   PluginOptions{Count: 5, BenchTime: "500ms"},
		BuildCost: true,
		Dispatch: DispatchOptions{
			Webhooks:    []int{1, 4, 8},
			Repetitions: 3,
			Load:        LoadOptions{Creates: 200, WarmUp: 10, Clients: 1, Timeout: 5 * time.Minute},
			// A short timeout keeps stock's runs short; ours' figure does not depend on it.
			DeadTimeoutSeconds: 2, DeadCreates: 1000, StockDeadCreates: 5,
			SlowHold: 5 * time.Second, SlowCreates: 3,
			ProfileWindow: 10 * time.Second,
		},
	}
}

// Validate reports every option that cannot work.
func (o Options) Validate() error {
	var errs []error
	for _, setting := range []struct{ name, value string }{
		{"bin dir", o.BinDir}, {"repo root", o.RepoRoot}, {"work dir", o.WorkDir},
		{"go tool", o.GoTool}, {"benchtime", o.Plugins.BenchTime},
	} {
		if setting.value == "" {
			errs = append(errs, fmt.Errorf("the %s is not set", setting.name))
		}
	}
	positive := func(name string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", name, v))
		}
	}
	load := func(table string, l LoadOptions) {
		positive(table+" creates", l.Creates)
		positive(table+" clients", l.Clients)
		if l.WarmUp < 0 {
			errs = append(errs, fmt.Errorf("%s warm-up must not be negative, got %d", table, l.WarmUp))
		}
		if l.Timeout <= 0 {
			errs = append(errs, fmt.Errorf("%s timeout must be positive, got %s", table, l.Timeout))
		}
	}
	positive("drop-in starts", o.DropIn.Starts)
	load("drop-in", o.DropIn.Load)
	positive("drop-in list pods", o.DropIn.ListPods)
	positive("drop-in lists", o.DropIn.Lists)
	positive("drop-in watchers", o.DropIn.Watchers)
	positive("drop-in watch creates", o.DropIn.WatchCreates)
	positive("policy repetitions", o.Policy.Repetitions)
	load("policy", o.Policy.Load)
	positive("fan-out repetitions", o.FanOut.Repetitions)
	load("fan-out", o.FanOut.Load)
	if len(o.FanOut.Webhooks) == 0 {
		errs = append(errs, errors.New("fan-out needs at least one number of webhooks"))
	}
	for _, n := range o.FanOut.Webhooks {
		if n < 1 || n > maxWebhooksProbed {
			errs = append(errs, fmt.Errorf("fan-out webhooks must be from 1 to %d, got %d", maxWebhooksProbed, n))
		}
	}
	if o.FanOut.Hold <= 0 {
		errs = append(errs, fmt.Errorf("fan-out hold must be positive, got %s", o.FanOut.Hold))
	}
	positive("plugin benchmark count", o.Plugins.Count)
	positive("dispatch repetitions", o.Dispatch.Repetitions)
	load("dispatch", o.Dispatch.Load)
	positive("dispatch dead-webhook creates", o.Dispatch.DeadCreates)
	positive("dispatch stock dead-webhook creates", o.Dispatch.StockDeadCreates)
	positive("dispatch dead-webhook timeoutSeconds", int(o.Dispatch.DeadTimeoutSeconds))
	positive("dispatch fast-deny creates", o.Dispatch.SlowCreates)
	if len(o.Dispatch.Webhooks) == 0 {
		errs = append(errs, errors.New("dispatch needs at least one number of webhooks"))
	}
	for _, n := range o.Dispatch.Webhooks {
		if n < 1 || n > maxWebhooksProbed {
			errs = append(errs, fmt.Errorf("dispatch webhooks must be from 1 to %d, got %d", maxWebhooksProbed, n))
		}
	}
	if o.Dispatch.ProfileWindow < time.Second {
		errs = append(errs, fmt.Errorf("dispatch profile window %s: the profile endpoint takes whole seconds, at least 1", o.Dispatch.ProfileWindow))
	}
	if o.Dispatch.SlowHold <= 0 {
		errs = append(errs, fmt.Errorf("dispatch slow hold must be positive, got %s", o.Dispatch.SlowHold))
	}
	return errors.Join(errs...)
}
