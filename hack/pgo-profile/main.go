// Command pgo-profile is `make pgo-profile`: it runs the documented workload against our
// kube-apiserver (internal/bench.CollectProfile), profiles the server's CPU during it and
// writes the merged profile to cmd/kube-apiserver/default.pgo, which every build of the
// binary then compiles with. The binaries must be built (make build etcd).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/bench"
	"github.com/portcullis-k8s/portcullis/internal/harness"
)

func main() {
	opts := bench.DefaultProfileOptions()
	binDir := flag.String("bin-dir", "_output/bin", "directory holding kube-apiserver and etcd")
	flag.StringVar(&opts.Out, "out", "cmd/kube-apiserver/default.pgo", "the merged CPU profile to write")
	workDir := flag.String("work-dir", "", "where servers keep PKI, data, logs and the phases' profiles (default: a temporary directory, removed on success)")
	flag.StringVar(&opts.GoTool, "go", opts.GoTool, "the go command (its pprof merges the profiles)")
	flag.DurationVar(&opts.Window, "window", opts.Window, "how long each profile window lasts")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "make pgo-profile: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts, *binDir, *workDir); err != nil {
		fmt.Fprintf(os.Stderr, "make pgo-profile: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, opts bench.ProfileOptions, binDir, workDir string) error {
	var err error
	if opts.BinDir, err = filepath.Abs(binDir); err != nil {
		return err
	}
	workDir, keepWorkDir, err := harness.WorkDir(workDir, "portcullis-pgo-")
	if err != nil {
		return err
	}
	opts.WorkDir = workDir
	opts.Progress = os.Stderr
	started := time.Now()
	if err := bench.CollectProfile(ctx, opts); err != nil {
		return fmt.Errorf("%w\n(servers' logs are in %s)", err, workDir)
	}
	info, err := os.Stat(opts.Out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "make pgo-profile: wrote %s (%d KiB) in %s\n", opts.Out, info.Size()/1024, time.Since(started).Round(time.Second))
	if !keepWorkDir {
		return os.RemoveAll(workDir)
	}
	return nil
}
