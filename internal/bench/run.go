package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/harness"
)

// Results are everything one run of the harness measured.
type Results struct {
	Options Options
	Machine Machine
	// Started and Finished bound the run; LoadBefore and LoadAfter are the machine's load
	// averages then.
	Started, Finished     time.Time
	LoadBefore, LoadAfter LoadAverage
	Ours, Stock           Binary

	DropIn   *DropInResult
	Policy   *PolicyResult
	FanOut   *FanOutResult
	Plugins  *PluginsResult
	Dispatch *DispatchResult

	// Disturbances say, per table, how much CPU other processes took while it ran.
	Disturbances []Disturbance
}

// environment is what every table's run shares.
type environment struct {
	oursBinary, stockBinary, etcdBinary string
	pki                                 *controlplane.PKI
	workDir, repoRoot, goTool           string
	progress                            *harness.Progress
}

func (e *environment) progressf(format string, args ...any) {
	e.progress.Printf(format, args...)
}

// Run measures the five tables, one after the other, so that no table's load disturbs
// another's. It stops every process it started before returning, on success or not.
func Run(ctx context.Context, opts Options) (*Results, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("invalid options: %w", err)
	}
	env := &environment{
		oursBinary:  filepath.Join(opts.BinDir, "kube-apiserver"),
		stockBinary: filepath.Join(opts.BinDir, "kube-apiserver-stock"),
		etcdBinary:  filepath.Join(opts.BinDir, "etcd"),
		workDir:     opts.WorkDir,
		repoRoot:    opts.RepoRoot,
		goTool:      opts.GoTool,
		progress:    harness.NewProgress(opts.Progress),
	}
	results := &Results{Options: opts, Machine: readMachine(), Started: env.progress.Started(), LoadBefore: readLoadAverage()}
	var err error
	if results.Ours, err = describeBinary(env.oursBinary); err != nil {
		return nil, err
	}
	if results.Stock, err = describeBinary(env.stockBinary); err != nil {
		return nil, err
	}
	if _, err := fileSize(env.etcdBinary); err != nil {
		return nil, fmt.Errorf("etcd is not built: %w", err)
	}
	if env.pki, err = controlplane.WritePKI(filepath.Join(opts.WorkDir, "pki")); err != nil {
		return nil, err
	}

	// measure runs one table and records how busy the rest of the machine was meanwhile.
	measure := func(table string, run func() error) error {
		before := readCPUSample()
		if err := run(); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
		results.Disturbances = append(results.Disturbances, disturbance(table, before, readCPUSample()))
		return nil
	}
	if opts.OnlyDispatch {
		env.progressf("table 5 alone: webhook dispatch, ours against stock, %d repetitions", opts.Dispatch.Repetitions)
		if results.Dispatch, err = runDispatch(ctx, env, opts.Dispatch); err != nil {
			return nil, err
		}
		results.Finished = time.Now()
		return results, nil
	}
	env.progressf("table 1: drop-in cost, %d starts of each binary", opts.DropIn.Starts)
	if err := measure("table 1, drop-in cost", func() (err error) {
		results.DropIn, err = runDropIn(ctx, env, opts.DropIn)
		return err
	}); err != nil {
		return nil, err
	}
	if opts.BuildCost {
		env.progressf("table 1: the PGO profile's build cost, two cold builds")
		if err := measure("table 1, PGO build cost", func() (err error) {
			results.DropIn.Build, err = measureBuildCost(ctx, env)
			return err
		}); err != nil {
			return nil, err
		}
	}
	env.progressf("table 2: the same policy three ways, %d repetitions", opts.Policy.Repetitions)
	if err := measure("table 2, the same policy three ways", func() (err error) {
		results.Policy, err = runPolicy(ctx, env, opts.Policy)
		return err
	}); err != nil {
		return nil, err
	}
	env.progressf("table 3: webhook fan-out, %d repetitions", opts.FanOut.Repetitions)
	if err := measure("table 3, webhook fan-out", func() (err error) {
		results.FanOut, err = runFanOut(ctx, env, opts.FanOut)
		return err
	}); err != nil {
		return nil, err
	}
	env.progressf("table 4: the plugins' Go benchmarks")
	if err := measure("table 4, plugin benchmarks", func() (err error) {
		results.Plugins, err = runPluginBenchmarks(ctx, env, opts.Plugins)
		return err
	}); err != nil {
		return nil, err
	}
	env.progressf("table 5: webhook dispatch, ours against stock, %d repetitions", opts.Dispatch.Repetitions)
	if err := measure("table 5, webhook dispatch", func() (err error) {
		results.Dispatch, err = runDispatch(ctx, env, opts.Dispatch)
		return err
	}); err != nil {
		return nil, err
	}
	results.Finished = time.Now()
	results.LoadAfter = readLoadAverage()
	env.progressf("done")
	return results, nil
}
