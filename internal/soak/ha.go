package soak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/balancer"
)

// FaultAPIServerKill SIGKILLs one kube-apiserver of an HA pair under load; clients reach
// the pair through a TCP balancer on loopback and fail over to the other.
const FaultAPIServerKill FaultKind = "apiserver-kill"

// HAResult is section 3: the pairs killed behind a balancer, one per binary, and ours on a
// three-member etcd over TLS, restarted one after the other.
type HAResult struct {
	Pairs []*RunResult
	// Cluster is nil when not run.
	Cluster *HAClusterResult
}

func (h *HAResult) failures() []string {
	var out []string
	for _, r := range h.Pairs {
		out = append(out, r.failures()...)
	}
	if h.Cluster != nil {
		out = append(out, h.Cluster.failures()...)
	}
	return out
}

// runHA runs, for each binary, two servers on one etcd behind a balancer, and kills one;
// then, if asked, two of ours on a three-member etcd over TLS through a rolling restart.
func (e *environment) runHA(ctx context.Context) (*HAResult, error) {
	h := &HAResult{}
	for _, binary := range e.opts.Binaries {
		e.progressf("HA pair of %s behind a balancer, one killed under load", binary)
		r, err := e.runHAPair(ctx, binary)
		if err != nil {
			return nil, fmt.Errorf("%s pair: %w", binary, err)
		}
		e.report(r)
		h.Pairs = append(h.Pairs, r)
	}
	if e.opts.HACluster && slices.Contains(e.opts.Binaries, Ours) {
		e.progressf("HA: two of ours on a %d-member etcd over TLS, a rolling restart under load", etcdClusterSize)
		c, err := e.runHACluster(ctx)
		if err != nil {
			return nil, fmt.Errorf("ours on an etcd cluster: %w", err)
		}
		e.report(c.Run)
		h.Cluster = c
	}
	return h, nil
}

// runHAPair starts etcd, two servers of binary on it and a balancer in front of them,
// checks that the webhooks and the policy are in force through each server, then runs the
// load through the balancer and SIGKILLs the first server once FaultAt of the creates are
// answered. The killed server restarts after HAKillDown; the fault's window is the kill
// alone, since clients must recover while it is still down.
func (e *environment) runHAPair(ctx context.Context, binary string) (result *RunResult, err error) {
	dir := filepath.Join(e.opts.WorkDir, "ha-"+binary)
	result = &RunResult{Binary: binary, Fault: FaultAPIServerKill, Dir: dir}
	var stops []func() error
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			err = errors.Join(err, stops[i]())
		}
	}()
	etcd, err := startEtcdMember(ctx, e.etcdBinary, filepath.Join(dir, "etcd"), e.opts.Load.EtcdFsync)
	if err != nil {
		return nil, err
	}
	stops = append(stops, etcd.stop)
	webhooks, err := startWebhookServer(filepath.Join(dir, "webhooks"))
	if err != nil {
		return nil, err
	}
	stops = append(stops, webhooks.close)
	setups := []serverSetup{e.serverSetup(binary, etcd.clientURL), e.serverSetup(binary, etcd.clientURL)}
	servers, balancer, err := e.startBalancedPair(ctx, dir, binary, setups, webhooks, &stops)
	if err != nil {
		return nil, err
	}

	victim := servers[0]
	kill := func(ctx context.Context) (FaultWindow, error) {
		w := FaultWindow{Kind: FaultAPIServerKill, Injected: true, Start: time.Now(),
			Detail: fmt.Sprintf("one of two servers on one etcd, behind a TCP balancer on loopback, SIGKILLed; restarted after %s. The fault's window is the kill itself: clients must fail over while the server is down", e.opts.HAKillDown)}
		err := killProcess(victim.process)
		w.End = time.Now()
		if err != nil {
			return w, err
		}
		if err := pause(ctx, e.opts.HAKillDown); err != nil {
			return w, err
		}
		return w, victim.start(ctx)
	}
	if err := e.loadUnderFault(ctx, result, "https://"+balancer.Addr(), e.opts.FaultAt, kill); err != nil {
		return nil, err
	}
	for _, s := range servers {
		if err := s.process.WaitFor(ctx, readyTimeout, pollInterval, "/readyz after the run", func() error { return s.readyz(ctx) }, nil); err != nil {
			return nil, err
		}
	}
	// The restarted server lists too: what the survivor acknowledged is there.
	result.Verification, err = verify(ctx, etcdAccess{endpoints: []string{etcd.clientURL}}, victim.client, namespace, result.Load, binary == Ours)
	if err != nil {
		return nil, err
	}
	result.Panics, err = FindPanics(servers[0].logFile(), servers[1].logFile(), filepath.Join(etcd.dir, "etcd.log"))
	return result, err
}

func serverAddr(s *apiServer) string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func writeHA(b *bytes.Buffer, h *HAResult) {
	if len(h.Pairs) > 0 {
		b.WriteString("### A pair killed behind a balancer\n\n")
		b.WriteString("Two servers of the same binary on one etcd, with the same flags, behind a TCP balancer on 127.0.0.1 that spreads connections round robin and skips a server that does not accept. The policy and the webhooks are registered through the first; before the load, a dry run through each server shows both webhooks' annotations (and, on ours, PodSecurityPolicy's) and the refusal by design. The load goes through the balancer; once its share is answered the first server is SIGKILLed (and restarted later) and its clients fail over to the second.\n\n")
		writeHATable(b, h.Pairs, "Time to recover runs from the kill.")
	}
	if h.Cluster != nil {
		writeHACluster(b, h.Cluster)
	}
}

// writeHATable is the faults' table and checks for the HA runs.
func writeHATable(b *bytes.Buffer, runs []*RunResult, recoveryNote string) {
	b.WriteString(recoveryNote + "\n\n")
	b.WriteString("| run | sent | acknowledged | refused by design | failed otherwise (by reason) | lost | refused but stored | time to recover | p99 | max | panics in the logs |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range runs {
		l := run.Load
		refused, failed := splitFailures(l)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %d | %d | %s | %s | %s | %d |\n",
			run.Name(), thousands(len(l.Outcomes)-l.Unsent()), thousands(l.Acked()), thousands(refused), failed,
			run.Verification.Lost, run.Verification.RefusedStored, formatRecovery(run.Recovery),
			formatLatency(l.Latencies.Percentile(99)), formatLatency(l.Latencies.Max()), run.Panics.Count)
	}
	b.WriteString("\n")
	writeChecks(b, runs)
}

// startBalancedPair starts a server for each setup and a balancer in front of them,
// registers the policy and the webhooks through the first and waits until the same chain
// is in force through the second. What it starts is appended to stops.
func (e *environment) startBalancedPair(ctx context.Context, dir, binary string, setups []serverSetup, webhooks *webhookServer, stops *[]func() error) ([]*apiServer, *balancer.TCP, error) {
	servers := make([]*apiServer, len(setups))
	addrs := make([]string, len(setups))
	for i, setup := range setups {
		s, err := startAPIServer(ctx, setup, filepath.Join(dir, "apiserver-"+strconv.Itoa(i)))
		if err != nil {
			return nil, nil, err
		}
		*stops = append(*stops, s.stop)
		servers[i], addrs[i] = s, serverAddr(s)
	}
	lb, err := balancer.Start(addrs...)
	if err != nil {
		return nil, nil, err
	}
	*stops = append(*stops, lb.Close)
	if err := e.prepare(ctx, servers[0], binary, webhooks); err != nil {
		return nil, nil, err
	}
	for _, s := range servers[1:] {
		if err := e.waitInForce(ctx, s, binary); err != nil {
			return nil, nil, err
		}
	}
	return servers, lb, nil
}
