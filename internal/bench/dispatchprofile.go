package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DispatchProfile is where one server's CPU went while N patching mutating webhooks were
// called on every create: the top of its CPU profile under the mutating dispatcher's
// Dispatch (upstream's or ours), by cumulative time.
type DispatchProfile struct {
	Server   string
	Webhooks int
	// Creates are the creates answered while the profile ran, for Window.
	Creates int
	Window  time.Duration
	// Dispatch is the CPU time under Dispatch; Top the heaviest functions it calls.
	Dispatch time.Duration
	Top      []ProfileEntry
}

// PerCall is the CPU under Dispatch per webhook call.
func (p DispatchProfile) PerCall() time.Duration {
	if p.Creates == 0 || p.Webhooks == 0 {
		return 0
	}
	return p.Dispatch / time.Duration(p.Creates*p.Webhooks)
}

// ProfileEntry is one function of a profile: its own CPU time (flat) and that of
// everything it called (cumulative).
type ProfileEntry struct {
	Function  string
	Flat, Cum time.Duration
}

// dispatchFunction matches the mutating dispatchers' Dispatch, upstream's and ours.
const dispatchFunction = `webhook/mutating\.\(\*(mutatingDispatcher|dispatcher)\)\.Dispatch$`

// profileEntries is how many functions a DispatchProfile keeps; pprof lists more, since
// Dispatch's callers come first.
const profileEntries = 15

// profileDispatch profiles server for window while one client creates pods, one after
// another, through n patching mutating webhooks.
func profileDispatch(ctx context.Context, env *environment, name string, server *apiServer, webhooks *webhookServer, n int, window time.Duration, dir string) (profile DispatchProfile, err error) {
	remove, err := installImmediate(ctx, server, webhooks, mutatingKind, n, nil)
	if err != nil {
		return DispatchProfile{}, err
	}
	defer func() { err = errors.Join(err, remove(context.WithoutCancel(ctx))) }()
	path := filepath.Join(dir, fmt.Sprintf("dispatch-%s-%d.pprof", strings.ReplaceAll(name, " ", "-"), n))
	var creates atomic.Int64
	env.progressf("dispatch, %s: profiling %s of creates through %d mutating webhooks", name, window, n)
	if err := profileWhile(ctx, server, window, path, func(ctx context.Context) error {
		pods := server.client.CoreV1().Pods(dispatchNamespace)
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := pods.Create(ctx, benchPod(fmt.Sprintf("profile-%d", i)), metav1.CreateOptions{}); err != nil {
				return err
			}
			creates.Add(1)
		}
		return ctx.Err()
	}); err != nil {
		return DispatchProfile{}, err
	}
	profile = DispatchProfile{Server: name, Webhooks: n, Creates: int(creates.Load()), Window: window}
	entries, err := topUnder(ctx, env.goTool, path, dispatchFunction)
	if err != nil {
		return DispatchProfile{}, err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Function, ").Dispatch") && strings.Contains(e.Function, "webhook/mutating.") {
			profile.Dispatch = e.Cum
		}
	}
	if profile.Dispatch == 0 {
		return DispatchProfile{}, fmt.Errorf("the profile %s has no samples under the mutating dispatch", path)
	}
	// What Dispatch calls: its callers (the admission chain, the handler) share its samples.
	for _, e := range entries {
		if e.Cum < profile.Dispatch && len(profile.Top) < profileEntries {
			profile.Top = append(profile.Top, e)
		}
	}
	return profile, deleteLoadPods(ctx, server.client, dispatchNamespace)
}

// topUnder lists, with pprof, the heaviest functions by cumulative time among the samples
// under a function matching focus.
func topUnder(ctx context.Context, goTool, path, focus string) ([]ProfileEntry, error) {
	cmd := exec.CommandContext(ctx, goTool, "tool", "pprof", "-top", "-cum", fmt.Sprintf("-nodecount=%d", 4*profileEntries), "-focus="+focus, path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s tool pprof -top %s: %w\n%s", goTool, path, err, stderr.Bytes())
	}
	return parseTop(out)
}

// parseTop reads pprof's -top rows: flat, flat%, sum%, cum, cum%, function.
func parseTop(out []byte) ([]ProfileEntry, error) {
	var entries []ProfileEntry
	header := false
	scanner := bufio.NewScanner(bytes.NewReader(out))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) >= 5 && fields[0] == "flat" && fields[3] == "cum" {
			header = true
			continue
		}
		if !header || len(fields) < 6 {
			continue
		}
		flat, err := time.ParseDuration(fields[0])
		if err != nil {
			return nil, fmt.Errorf("pprof row %q: %w", scanner.Text(), err)
		}
		cum, err := time.ParseDuration(fields[3])
		if err != nil {
			return nil, fmt.Errorf("pprof row %q: %w", scanner.Text(), err)
		}
		entries = append(entries, ProfileEntry{Function: strings.Join(fields[5:], " "), Flat: flat, Cum: cum})
	}
	if !header {
		return nil, fmt.Errorf("no rows in pprof's output:\n%s", out)
	}
	return entries, scanner.Err()
}
