package soak

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Recovery says whether, and how fast, creates went back to healthy outcomes after a fault.
type Recovery struct {
	// Disrupted is true when any create had an unhealthy outcome (Outcome.Healthy).
	Disrupted bool
	// Unhealthy counts those creates.
	Unhealthy int
	// Recovered is true when a create sent after both the fault's end and the last unhealthy
	// outcome came back healthy.
	Recovered bool
	// After is the time from the fault's end to the answer of that create: the recovery
	// point, after which every answer was healthy. 0 when no create was disrupted.
	After time.Duration
	// LoadEndedFirst is true when no create was sent after the fault's end: the run could
	// not show recovery, whatever happened.
	LoadEndedFirst bool
}

// computeRecovery finds the recovery point of a run whose fault ended at faultEnd: the
// first healthy answer to a create sent no earlier than faultEnd and the last unhealthy
// answer. Every answer after the last unhealthy one is healthy by definition, so from then
// on creates succeed again. A run whose load ended before any create was sent after the
// fault's end has not shown recovery.
func computeRecovery(outcomes []Outcome, faultEnd time.Time) Recovery {
	var r Recovery
	var lastUnhealthy time.Time
	for _, o := range outcomes {
		if o.sent() && !o.Healthy() {
			r.Disrupted = true
			r.Unhealthy++
			if o.Done.After(lastUnhealthy) {
				lastUnhealthy = o.Done
			}
		}
	}
	from := faultEnd
	if lastUnhealthy.After(from) {
		from = lastUnhealthy
	}
	var recoveredAt time.Time
	r.LoadEndedFirst = true
	for _, o := range outcomes {
		if o.sent() && !o.Sent.Before(faultEnd) {
			r.LoadEndedFirst = false
		}
		if o.sent() && o.Healthy() && !o.Sent.Before(from) && (recoveredAt.IsZero() || o.Done.Before(recoveredAt)) {
			recoveredAt = o.Done
		}
	}
	if recoveredAt.IsZero() {
		return r
	}
	r.Recovered = true
	if r.Disrupted {
		r.After = max(recoveredAt.Sub(faultEnd), 0)
	}
	return r
}

// FaultWindow is when a fault was in force.
type FaultWindow struct {
	Kind FaultKind
	// Injected is false when the load ended before the fault could start.
	Injected   bool
	Start, End time.Time
	// Detail says what exactly was done, for the report.
	Detail string
}

// faultTargets are what the faults act on in one run.
type faultTargets struct {
	webhooks *webhookServer
	etcd     *etcdMember
	proxy    *delayProxy
}

// inject runs the fault and returns once it is over (what was stopped runs again).
func inject(ctx context.Context, kind FaultKind, opts Options, t faultTargets) (FaultWindow, error) {
	w := FaultWindow{Kind: kind, Injected: true, Start: time.Now()}
	var err error
	switch kind {
	case FaultWebhookKill:
		w.Detail = fmt.Sprintf("the webhook server (all four webhooks) closed, restarted on its port after %s", opts.WebhookDown)
		if err = t.webhooks.kill(); err == nil {
			if err = pause(ctx, opts.WebhookDown); err == nil {
				err = t.webhooks.restart(ctx)
			}
		}
	case FaultEtcdKill:
		w.Detail = fmt.Sprintf("etcd SIGKILLed, restarted on its data dir and ports after %s; the fault ends when it is healthy", opts.EtcdDown)
		if err = t.etcd.kill(); err == nil {
			if err = pause(ctx, opts.EtcdDown); err == nil {
				err = t.etcd.start(ctx)
			}
		}
	case FaultSlowEtcd:
		w.Detail = fmt.Sprintf("%s added to every chunk between kube-apiserver and etcd, both ways, for %s", opts.SlowDelay, opts.SlowFor)
		t.proxy.SetDelay(opts.SlowDelay)
		err = pause(ctx, opts.SlowFor)
		t.proxy.SetDelay(0)
	default:
		err = fmt.Errorf("unknown fault %q", kind)
	}
	w.End = time.Now()
	return w, err
}

// pause waits d: the length of a fault, not a stand-in for a condition.
func pause(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// PanicLines are the panics a log reports.
type PanicLines struct {
	// Count is the number of panics: a panic's report spans many lines, counted once.
	Count int
	// First holds the first few reports' opening lines, for the report.
	First []string
	// Requests counts, by method and URI, the requests the apiserver says it panicked
	// serving ("apiserver panic'd"): a recovered panic is reported both ways.
	Requests map[string]int
}

// panicReport matches the line that opens a panic's report: the apiserver's recovered
// "Observed a panic", a crash's "panic: " or "fatal error: ", and net/http's (or http2's)
// "panic serving" (counted apart: the apiserver re-raises a recovered panic to abort the
// response, and the HTTP server then reports that same panic again).
var (
	panicReport  = regexp.MustCompile(`Observed a panic|^panic: |^fatal error: `)
	panicServing = regexp.MustCompile(`panic serving`)
)

// logField is the value of key="value" in a structured log line.
func logField(line, key string) string {
	_, rest, ok := strings.Cut(line, key+`="`)
	if !ok {
		return ""
	}
	value, _, _ := strings.Cut(rest, `"`)
	return value
}

// FindPanics counts the panics the log files report, each once; a missing file reports none.
func FindPanics(files ...string) (PanicLines, error) {
	var p PanicLines
	for _, file := range files {
		data, err := os.ReadFile(file)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return p, err
		}
		scanner := bufio.NewScanner(bytes.NewReader(data))
		scanner.Buffer(make([]byte, 64<<10), 4<<20)
		// observed counts the "Observed a panic" reports whose re-raised "panic serving"
		// has not come yet: such a line is the same panic, not another.
		observed := 0
		for scanner.Scan() {
			line := scanner.Text()
			if _, rest, ok := strings.Cut(line, `"apiserver panic'd" `); ok {
				if p.Requests == nil {
					p.Requests = map[string]int{}
				}
				p.Requests[logField(rest, "method")+" "+logField(rest, "URI")]++
			}
			opens := panicReport.MatchString(line)
			if strings.Contains(line, "Observed a panic") {
				observed++
			} else if panicServing.MatchString(line) {
				if observed > 0 {
					observed--
				} else {
					opens = true
				}
			}
			if opens {
				p.Count++
				if len(p.First) < 3 {
					p.First = append(p.First, truncate(strings.TrimSpace(line), 200))
				}
			}
		}
		if err := scanner.Err(); err != nil {
			return p, fmt.Errorf("scanning %s: %w", file, err)
		}
	}
	return p, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
