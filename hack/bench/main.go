// Command bench is `make bench`: it measures Portcullis's kube-apiserver against stock
// kube-apiserver, against the same policy as a ValidatingAdmissionPolicy and as a webhook,
// and under webhook fan-out, runs the plugins' Go benchmarks, and rewrites
// docs/benchmarks.md. The binaries must be built (make build etcd stock).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/bench"
	"github.com/portcullis-k8s/portcullis/internal/harness"
)

func main() {
	opts := bench.DefaultOptions()
	binDir := flag.String("bin-dir", "_output/bin", "directory holding kube-apiserver, kube-apiserver-stock and etcd")
	out := flag.String("out", "docs/benchmarks.md", "the Markdown file to write")
	workDir := flag.String("work-dir", "", "where servers keep PKI, data and logs (default: a temporary directory, removed on success)")
	repoRoot := flag.String("repo-root", ".", "the module's root, where the plugins' Go benchmarks run")
	flag.StringVar(&opts.GoTool, "go", opts.GoTool, "the go command")
	flag.IntVar(&opts.DropIn.Starts, "starts", opts.DropIn.Starts, "table 1: starts of each binary")
	flag.IntVar(&opts.DropIn.Load.Creates, "drop-in-creates", opts.DropIn.Load.Creates, "table 1: timed pod creates per start")
	flag.BoolVar(&opts.BuildCost, "build-cost", opts.BuildCost, "table 1: measure what the PGO profile costs a cold build (two builds from an empty cache, minutes each)")
	flag.IntVar(&opts.Policy.Repetitions, "policy-repetitions", opts.Policy.Repetitions, "table 2: repetitions")
	flag.IntVar(&opts.Policy.Load.Creates, "policy-creates", opts.Policy.Load.Creates, "table 2: timed pod creates per run")
	flag.IntVar(&opts.FanOut.Repetitions, "fan-out-repetitions", opts.FanOut.Repetitions, "table 3: repetitions")
	flag.IntVar(&opts.FanOut.Load.Creates, "fan-out-creates", opts.FanOut.Load.Creates, "table 3: timed pod creates per run")
	flag.IntVar(&opts.Plugins.Count, "bench-count", opts.Plugins.Count, "table 4: go test -count")
	flag.StringVar(&opts.Plugins.BenchTime, "benchtime", opts.Plugins.BenchTime, "table 4: go test -benchtime")
	flag.BoolVar(&opts.OnlyDispatch, "only-dispatch", false, "run table 5 alone and write only its section to -out (for working on the dispatch; make bench runs every table)")
	flag.IntVar(&opts.Dispatch.Repetitions, "dispatch-repetitions", opts.Dispatch.Repetitions, "table 5: repetitions")
	flag.IntVar(&opts.Dispatch.Load.Creates, "dispatch-creates", opts.Dispatch.Load.Creates, "table 5: timed creates of each kind per overhead run")
	flag.IntVar(&opts.Dispatch.DeadCreates, "dispatch-dead-creates", opts.Dispatch.DeadCreates, "table 5: creates of each kind per run of the dead-webhook, shadow and Warn rows")
	flag.Func("dispatch-webhooks", "table 5: the numbers of webhooks, comma-separated (default 1,4,8)", func(v string) error {
		var sizes []int
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return err
			}
			sizes = append(sizes, n)
		}
		opts.Dispatch.Webhooks = sizes
		return nil
	})
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "make bench: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts, *binDir, *repoRoot, *workDir, *out); err != nil {
		fmt.Fprintf(os.Stderr, "make bench: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, opts bench.Options, binDir, repoRoot, workDir, out string) error {
	var err error
	if opts.BinDir, err = filepath.Abs(binDir); err != nil {
		return err
	}
	if opts.RepoRoot, err = filepath.Abs(repoRoot); err != nil {
		return err
	}
	workDir, keepWorkDir, err := harness.WorkDir(workDir, "portcullis-bench-")
	if err != nil {
		return err
	}
	opts.WorkDir = workDir
	opts.Progress = os.Stderr

	started := time.Now()
	results, err := bench.Run(ctx, opts)
	if err != nil {
		// Keep the servers' logs for the post-mortem.
		return fmt.Errorf("%w\n(servers' logs are in %s)", err, workDir)
	}
	var doc bytes.Buffer
	write := bench.WriteMarkdown
	if opts.OnlyDispatch {
		write = bench.WriteDispatchMarkdown
	}
	if err := write(&doc, results); err != nil {
		return err
	}
	if err := harness.WriteFileAtomic(out, doc.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "make bench: wrote %s in %s\n", out, time.Since(started).Round(time.Second))
	if !keepWorkDir {
		return os.RemoveAll(workDir)
	}
	return nil
}
