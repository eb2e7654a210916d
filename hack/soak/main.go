// Command soak is `make soak`: it runs Portcullis's kube-apiserver and stock kube-apiserver
// through the same pod-create load and the same faults (a webhook server killed, etcd
// SIGKILLed, etcd slowed down, one of an HA pair killed), checks etcd itself for lost
// writes, sends the malformed-request table, floods InitialResources with distinct images
// (ours only), and rewrites docs/reliability.md. The
// binaries must be built (make build etcd stock).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/portcullis-k8s/portcullis/internal/harness"
	"github.com/portcullis-k8s/portcullis/internal/soak"
)

func main() {
	opts := soak.DefaultOptions()
	binDir := flag.String("bin-dir", "_output/bin", "directory holding kube-apiserver, kube-apiserver-stock and etcd")
	out := flag.String("out", "docs/reliability.md", "the Markdown file to write")
	workDir := flag.String("work-dir", "", "where servers keep PKI, data and logs (default: a temporary directory, removed on success)")
	binaries := flag.String("binaries", strings.Join(opts.Binaries, ","), "the servers to run, comma-separated: ours, stock")
	faults := flag.String("faults", joinFaults(opts.Faults), "the faults to inject, comma-separated (empty for none): webhook-kill, etcd-kill, slow-etcd")
	flag.IntVar(&opts.Load.Pods, "pods", opts.Load.Pods, "pod creates per run")
	flag.IntVar(&opts.Load.Clients, "clients", opts.Load.Clients, "concurrent client-go clients")
	flag.BoolVar(&opts.HA, "ha", opts.HA, "run the HA pairs behind a balancer, one server killed")
	flag.BoolVar(&opts.HACluster, "ha-cluster", opts.HACluster, "with -ha: two of ours on a three-member etcd over TLS through a rolling restart")
	flag.BoolVar(&opts.BadInputs, "bad-inputs", opts.BadInputs, "send the malformed-request table")
	flag.IntVar(&opts.IRFlood.Images, "ir-images", opts.IRFlood.Images, "InitialResources flood: dry-run pod creates with distinct images (0: not run)")
	flag.IntVar(&opts.IRFlood.Clients, "ir-clients", opts.IRFlood.Clients, "InitialResources flood: concurrent clients")
	flag.StringVar(&opts.FuzzReport, "fuzz-report", "", "hack/fuzz.sh's TSV report to include (missing: \"not run\")")
	smoke := flag.Bool("smoke", false, "make test's small sizes (before the flags above apply)")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "make soak: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if *smoke {
		// The smoke sizes, with whatever flags were set explicitly on top.
		smokeOpts := soak.SmokeOptions()
		flag.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "pods":
				smokeOpts.Load.Pods = opts.Load.Pods
			case "clients":
				smokeOpts.Load.Clients = opts.Load.Clients
			case "ha":
				smokeOpts.HA = opts.HA
			case "ha-cluster":
				smokeOpts.HACluster = opts.HACluster
			case "bad-inputs":
				smokeOpts.BadInputs = opts.BadInputs
			case "ir-images":
				smokeOpts.IRFlood.Images = opts.IRFlood.Images
			case "ir-clients":
				smokeOpts.IRFlood.Clients = opts.IRFlood.Clients
			}
		})
		smokeOpts.FuzzReport = opts.FuzzReport
		opts = smokeOpts
	}
	opts.Binaries = splitList(*binaries)
	opts.Faults = nil
	for _, f := range splitList(*faults) {
		opts.Faults = append(opts.Faults, soak.FaultKind(f))
	}

	// client-go logs each broken connection the faults cause; the report counts them.
	klog.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts, *binDir, *workDir, *out); err != nil {
		fmt.Fprintf(os.Stderr, "make soak: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, opts soak.Options, binDir, workDir, out string) error {
	var err error
	if opts.BinDir, err = filepath.Abs(binDir); err != nil {
		return err
	}
	workDir, keepWorkDir, err := harness.WorkDir(workDir, "portcullis-soak-")
	if err != nil {
		return err
	}
	opts.WorkDir = workDir
	opts.Progress = os.Stderr

	started := time.Now()
	results, err := soak.Run(ctx, opts)
	if err != nil {
		return fmt.Errorf("%w\n(servers' logs are in %s)", err, workDir)
	}
	var doc bytes.Buffer
	if err := soak.WriteReport(&doc, results); err != nil {
		return err
	}
	if err := harness.WriteFileAtomic(out, doc.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "make soak: wrote %s in %s\n", out, time.Since(started).Round(time.Second))
	if failures := results.Failures(); len(failures) > 0 {
		return fmt.Errorf("the soak found %d problem(s), listed in %s; servers' logs are in %s:\n  %s",
			len(failures), out, workDir, strings.Join(failures, "\n  "))
	}
	if !keepWorkDir {
		return os.RemoveAll(workDir)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func joinFaults(faults []soak.FaultKind) string {
	names := make([]string, len(faults))
	for i, f := range faults {
		names[i] = string(f)
	}
	return strings.Join(names, ",")
}
