package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
)

// DropInRun is what one start of one binary measured.
type DropInRun struct {
	// ReadyAfter is the time from starting the process to its first successful /readyz.
	ReadyAfter time.Duration
	// RSSReady is the resident set size at /readyz, RSSAfterLoad after the timed creates.
	RSSReady, RSSAfterLoad uint64
	// Load is the timed pod creates; LoadCPU the server's CPU time (user and system) in them.
	Load    LoadRun
	LoadCPU time.Duration
	// List is the timed LISTs of a namespace's pods; ListCPU the server's CPU time in them.
	List    *Latencies
	ListCPU time.Duration
	// WatchDelivered is the time from the first of the fan-out's creates to the moment every
	// watch has seen every one; WatchCPU the server's CPU time in it.
	WatchDelivered, WatchCPU time.Duration
}

// CPUPerThousandCreates is the server's CPU seconds per 1,000 timed creates.
func (r DropInRun) CPUPerThousandCreates() float64 {
	if r.Load.Creates == 0 {
		return 0
	}
	return r.LoadCPU.Seconds() / float64(r.Load.Creates) * 1000
}

// DropInResult is table 1: ours against stock, same flags, each start on a fresh etcd.
type DropInResult struct {
	Options DropInOptions
	// Ours[i] and Stock[i] ran in the same round, one right after the other.
	Ours, Stock []DropInRun
	// OursBinarySize and StockBinarySize are the binaries' sizes in bytes.
	OursBinarySize, StockBinarySize int64
	// Build is what compiling ours with its PGO profile costs; nil when not measured.
	Build *BuildCost
}

// runDropIn starts each binary opts.Starts times, alternating which goes first in a round,
// and loads each start with the same pod creates through the default admission chain.
func runDropIn(ctx context.Context, env *environment, opts DropInOptions) (*DropInResult, error) {
	result := &DropInResult{Options: opts}
	var err error
	if result.OursBinarySize, err = fileSize(env.oursBinary); err != nil {
		return nil, err
	}
	if result.StockBinarySize, err = fileSize(env.stockBinary); err != nil {
		return nil, err
	}
	for round := range opts.Starts {
		type contender struct {
			name, binary string
			runs         *[]DropInRun
		}
		order := []contender{{"ours", env.oursBinary, &result.Ours}, {"stock", env.stockBinary, &result.Stock}}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, c := range order {
			dir := filepath.Join(env.workDir, "drop-in", fmt.Sprintf("round-%d", round+1), c.name)
			run, err := measureStart(ctx, env, c.binary, dir, opts)
			if err != nil {
				return nil, fmt.Errorf("drop-in round %d, %s: %w", round+1, c.name, err)
			}
			env.progressf("drop-in round %d/%d, %s: ready in %s, %.0f creates/s, p50 %s, p99 %s",
				round+1, opts.Starts, c.name, run.ReadyAfter.Round(time.Millisecond), run.Load.Throughput(),
				run.Load.P50().Round(time.Microsecond), run.Load.P99().Round(time.Microsecond))
			*c.runs = append(*c.runs, run)
		}
	}
	return result, nil
}

// measureStart starts binary on a fresh etcd, times its way to /readyz, reads its RSS,
// loads it, reads its RSS again and stops both.
func measureStart(ctx context.Context, env *environment, binary, dir string, opts DropInOptions) (run DropInRun, err error) {
	etcd, err := startEtcd(ctx, env.etcdBinary, filepath.Join(dir, "etcd"))
	if err != nil {
		return DropInRun{}, err
	}
	defer func() { err = errors.Join(err, etcd.stop()) }()
	server, err := startAPIServer(ctx, binary, env.pki, dir, etcd.clientURL)
	if err != nil {
		return DropInRun{}, err
	}
	defer func() { err = errors.Join(err, server.stop()) }()
	run.ReadyAfter = server.readyAfter
	if run.RSSReady, err = server.rss(); err != nil {
		return DropInRun{}, err
	}
	const namespace = "drop-in"
	if err := loadNamespace(ctx, server.client, namespace); err != nil {
		return DropInRun{}, err
	}
	clients, err := controlplane.Clients(server.config, opts.Load.Clients)
	if err != nil {
		return DropInRun{}, err
	}
	if err := warmUp(ctx, clients, namespace, "pod", opts.Load); err != nil {
		return DropInRun{}, err
	}
	timed := createLoad{clients: clients, namespace: namespace, namePrefix: "pod", count: opts.Load.Creates, timeout: opts.Load.Timeout}
	if run.LoadCPU, err = server.cpuDuring(func() (err error) {
		run.Load, err = timed.run(ctx)
		return err
	}); err != nil {
		return DropInRun{}, err
	}
	if run.RSSAfterLoad, err = server.rss(); err != nil {
		return DropInRun{}, err
	}
	if run.List, run.ListCPU, err = measureLists(ctx, server, clients, opts); err != nil {
		return DropInRun{}, err
	}
	if run.WatchDelivered, run.WatchCPU, err = measureWatchFanOut(ctx, server, clients, opts); err != nil {
		return DropInRun{}, err
	}
	return run, nil
}

// warmUp runs opts.WarmUp untimed creates in namespace.
func warmUp(ctx context.Context, clients []kubernetes.Interface, namespace, namePrefix string, opts LoadOptions) error {
	if opts.WarmUp == 0 {
		return nil
	}
	load := createLoad{clients: clients, namespace: namespace, namePrefix: namePrefix + "-warm-up", count: opts.WarmUp, timeout: opts.Timeout}
	if _, err := load.run(ctx); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return nil
}

// timedCreates runs the untimed warm-up, then the timed creates, in namespace.
func timedCreates(ctx context.Context, clients []kubernetes.Interface, namespace, namePrefix string, opts LoadOptions) (LoadRun, error) {
	if err := warmUp(ctx, clients, namespace, namePrefix, opts); err != nil {
		return LoadRun{}, err
	}
	timed := createLoad{clients: clients, namespace: namespace, namePrefix: namePrefix, count: opts.Creates, timeout: opts.Timeout}
	return timed.run(ctx)
}

// timedCreatesThenDelete is timedCreates followed by deleting the pods it created, for
// servers that take several runs.
func timedCreatesThenDelete(ctx context.Context, clients []kubernetes.Interface, namespace, namePrefix string, opts LoadOptions) (LoadRun, error) {
	run, err := timedCreates(ctx, clients, namespace, namePrefix, opts)
	if err != nil {
		return LoadRun{}, err
	}
	return run, deleteLoadPods(ctx, clients[0], namespace)
}

func fileSize(path string) (int64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}
