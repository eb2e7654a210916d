package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/test/docs"
	"github.com/portcullis-k8s/portcullis/test/node"
)

// conformanceFocus are the specs make conformance runs: upstream's [Conformance] specs of
// sig-api-machinery, sig-auth and sig-node, which one node can run (sig-network's need
// kube-proxy, sig-apps' and sig-scheduling's more nodes or none of ours).
const conformanceFocus = `\[sig-(api-machinery|auth|node)\].*\[Conformance\]`

// conformanceSkips are the specs of conformanceFocus this node cannot run, each with the
// reason; docs/node.md lists each (checked).
var conformanceSkips = []struct{ spec, reason string }{
	{"Aggregator Should be able to support the 1.17 Sample API Server using the current Aggregator",
		"the sample API server's image is not built here, and the sample API server reaches the API server at the kubernetes Service, which nothing routes without kube-proxy"},
	{"ServiceAccountIssuerDiscovery should support OIDC discovery of service account issuer",
		"its pod reaches the API server at the kubernetes Service, which nothing routes without kube-proxy"},
	{"should allow server and client pods to establish an mTLS connection",
		"its client pod reaches the server pod through a Service by its DNS name: no kube-proxy, no cluster DNS"},
	{"ImageVolume should succeed with pod and pull policy of Always",
		"pull policy Always pulls from a registry, and none is reachable here"},
}

// conformanceProcsEnv is make conformance's CONFORMANCE_PROCS: ginkgo's parallel processes.
const conformanceProcsEnv = "PORTCULLIS_CONFORMANCE_PROCS"

// TestConformance runs upstream's conformance specs of conformanceFocus, built from the
// pinned Kubernetes (make conformance), on a node kubeadm installed stock on and swapped to
// ours with docs/operating.md's blocks. A spec that fails on ours runs again on ours alone,
// and, still failing, on stock after the guide's rollback on the same node: the test fails
// for each spec that passes on stock and fails on ours, and for each that fails on both,
// which this node then cannot run and conformanceSkips must name. Both servers route to the
// webhooks' and aggregated servers' Services' endpoints themselves
// (--enable-aggregator-routing): the node has no kube-proxy.
func TestConformance(t *testing.T) {
	dir := node.ConformanceDir(t)
	procs := 4
	if v := os.Getenv(conformanceProcsEnv); v != "" {
		var err error
		if procs, err = strconv.Atoi(v); err != nil || procs < 1 {
			t.Fatalf("$%s=%q: want a number of processes, 1 or more", conformanceProcsEnv, v)
		}
	}
	listed := specList(t)
	if err := os.RemoveAll(filepath.Join(dir, "report")); err != nil {
		t.Fatal(err)
	}
	guide := string(docs.ReadFile(t, filepath.Join(docs.RepoRoot(t), "docs", "node.md")))
	for _, skip := range conformanceSkips {
		if !strings.Contains(guide, skip.spec) {
			t.Errorf("docs/node.md does not list the skipped spec %q (%s)", skip.spec, skip.reason)
		}
	}

	n, s := installAndSwap(t, node.Newest(t), false, "enable-aggregator-routing=true")
	if flags := apiServerFlags(t, filepath.Join(n.Dir, "etc-kubernetes", "manifests", "kube-apiserver.yaml")); flags["enable-aggregator-routing"] != "true" {
		t.Fatalf("after the swap the manifest has no --enable-aggregator-routing=true: %v", flags)
	}
	n.ImportConformanceImages(t)

	ours := runConformance(t, n, dir, "ours", procs, conformanceFocus)
	checkSpecList(t, listed, ours, filepath.Join(dir, "report", "ours", "specs.tsv"))
	failed := ours.failed()
	t.Logf("on ours: %d specs passed, %d failed", len(ours.passed()), len(failed))
	if len(failed) > 0 {
		again := runConformance(t, n, dir, "ours-again", 1, exactly(failed))
		failed = slices.DeleteFunc(failed, func(spec string) bool {
			if again[spec] == "passed" {
				t.Logf("failed on ours among %d processes, passed on ours alone: %s", procs, spec)
				return true
			}
			return false
		})
		t.Logf("on ours, one at a time, %d of them failed again", len(failed))
	}

	rollBack(t, n, s)
	if len(failed) == 0 {
		return
	}
	stock := runConformance(t, n, dir, "stock", 1, exactly(failed))
	for _, spec := range failed {
		switch stock[spec] {
		case "passed":
			t.Errorf("passes on stock, fails on ours: %s", spec)
		case "", "skipped", "pending":
			t.Errorf("fails on ours, and did not run on stock (%q): not compared: %s", stock[spec], spec)
		default:
			// docs/node.md says every spec of the focus not skipped runs here.
			t.Errorf("fails on ours and on stock (%s), so this node cannot run it: add it to conformanceSkips with the reason, and to docs/node.md: %s", stock[spec], spec)
		}
	}
}

// conformanceSpecs is docs' list of the specs make conformance runs, one full text a line.
const conformanceSpecs = "docs/conformance-specs.txt"

// specList is conformanceSpecs' list.
func specList(t *testing.T) []string {
	t.Helper()
	var listed []string
	for _, line := range strings.Split(string(docs.ReadFile(t, filepath.Join(docs.RepoRoot(t), conformanceSpecs))), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			listed = append(listed, line)
		}
	}
	if len(listed) == 0 {
		t.Fatalf("%s lists no spec", conformanceSpecs)
	}
	return listed
}

// checkSpecList fails the test unless the specs the run ran to an end, passed or failed, are
// conformanceSpecs' list: a new Kubernetes release adds, renames or drops specs, and the list
// a reader sees must be what runs; a spec the run did not end (interrupted, timed out before
// it started) is not compared.
func checkSpecList(t *testing.T, listed []string, run specStates, report string) {
	t.Helper()
	ran := append(run.passed(), run.failed()...)
	for _, spec := range ran {
		if !slices.Contains(listed, spec) {
			t.Errorf("%s does not list %q, which ran (the run's list: %s)", conformanceSpecs, spec, report)
		}
	}
	for _, spec := range listed {
		if !slices.Contains(ran, spec) {
			t.Errorf("%s lists %q, which did not run to an end (%q; the run's list: %s)", conformanceSpecs, spec, run[spec], report)
		}
	}
}

// specStates are a run's specs by full text, and each one's end: passed, failed, skipped…
type specStates map[string]string

func (s specStates) passed() []string {
	return s.with(func(state string) bool { return state == "passed" })
}

// failed are the specs that ran and did not pass (failed, panicked, timed out, interrupted).
func (s specStates) failed() []string {
	return s.with(func(state string) bool { return state != "passed" && state != "skipped" && state != "pending" })
}

func (s specStates) with(keep func(string) bool) []string {
	var specs []string
	for spec, state := range s {
		if keep(state) {
			specs = append(specs, spec)
		}
	}
	slices.Sort(specs)
	return specs
}

// exactly is a focus matching specs by their full texts.
func exactly(specs []string) string {
	quoted := make([]string, len(specs))
	for i, spec := range specs {
		quoted[i] = regexp.QuoteMeta(spec)
	}
	return strings.Join(quoted, "|")
}

// runConformance runs e2e.test's specs matching focus, less conformanceSkips, against the
// node's API server with ginkgo's CLI in procs processes, and returns each spec's end. Its
// output and ginkgo's JSON report stay in dir/report/<label>.
func runConformance(t *testing.T, n *node.Node, dir, label string, procs int, focus string) specStates {
	t.Helper()
	reportDir := filepath.Join(dir, "report", label)
	if err := os.RemoveAll(reportDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(reportDir, 0o755); err != nil {
		t.Fatal(err)
	}
	skips := make([]string, len(conformanceSkips))
	for i, skip := range conformanceSkips {
		skips[i] = regexp.QuoteMeta(skip.spec)
	}
	log, err := os.Create(filepath.Join(reportDir, "output.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	// The run ends before go test's deadline, which would skip the node's cleanup; ginkgo and
	// its processes are killed with the test (their own process group).
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(4 * time.Hour)
	}
	timeout := time.Until(deadline) - 10*time.Minute
	if timeout < time.Minute {
		t.Fatalf("%s: %s left of the test's timeout, too little for a run and the node's cleanup", label, time.Until(deadline).Round(time.Second))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "ginkgo"),
		"--procs="+strconv.Itoa(procs), "--timeout="+timeout.Round(time.Second).String(), "--no-color", "--silence-skips",
		"--output-dir="+reportDir, "--json-report=report.json",
		"--focus="+focus, "--skip="+strings.Join(skips, "|"),
		filepath.Join(dir, "e2e.test"), "--",
		"--provider=skeleton", "--kubeconfig="+filepath.Join(n.Dir, "etc-kubernetes", "admin.conf"),
		"--kubectl-path="+filepath.Join(n.Bins.Dir, "kubectl"), "--report-dir="+reportDir)
	cmd.Dir, cmd.Stdout, cmd.Stderr = reportDir, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	t.Logf("%s: upstream's conformance specs, in %d processes: %s", label, procs, log.Name())
	runErr := cmd.Run()
	data, err := os.ReadFile(filepath.Join(reportDir, "report.json"))
	if err != nil {
		t.Fatalf("%s: ginkgo wrote no report (%v): %v; its output is in %s", label, runErr, err, log.Name())
	}
	var reports []struct {
		SuiteSucceeded bool
		SpecReports    []struct {
			ContainerHierarchyTexts []string
			LeafNodeType            string
			LeafNodeText            string
			State                   string
		}
	}
	if err := json.Unmarshal(data, &reports); err != nil || len(reports) != 1 {
		t.Fatalf("%s: ginkgo's report: %v (%d suites)", label, err, len(reports))
	}
	states := specStates{}
	for _, spec := range reports[0].SpecReports {
		if spec.LeafNodeType != "It" {
			if spec.State != "passed" {
				t.Fatalf("%s: the suite's %s ended %s; its output is in %s", label, spec.LeafNodeType, spec.State, log.Name())
			}
			continue
		}
		states[strings.Join(append(spec.ContainerHierarchyTexts, spec.LeafNodeText), " ")] = spec.State
	}
	if len(states.passed())+len(states.failed()) == 0 {
		t.Fatalf("%s: no spec ran (%v); its output is in %s", label, runErr, log.Name())
	}
	var summary strings.Builder
	for _, spec := range states.with(func(state string) bool { return state != "skipped" }) {
		fmt.Fprintf(&summary, "%s\t%s\n", states[spec], spec)
	}
	node.WriteFile(t, filepath.Join(reportDir, "specs.tsv"), summary.String())
	return states
}
