package soak

import (
	"maps"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// at builds an outcome sent at ms and answered at ms+took (milliseconds from base).
func at(base time.Time, sentMs, tookMs int, healthy bool) Outcome {
	o := Outcome{Name: "p", Sent: base.Add(time.Duration(sentMs) * time.Millisecond)}
	o.Done = o.Sent.Add(time.Duration(tookMs) * time.Millisecond)
	if healthy {
		o.UID = "uid"
	} else {
		o.Code, o.Reason, o.Message = http.StatusInternalServerError, "InternalError", "failed calling webhook"
	}
	return o
}

func TestComputeRecovery(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	cases := []struct {
		name     string
		outcomes []Outcome
		faultEnd time.Time
		want     Recovery
	}{
		{
			name:     "no failure, creates after the fault's end",
			outcomes: []Outcome{at(base, 0, 10, true), at(base, 500, 10, true)},
			faultEnd: ms(100),
			want:     Recovery{Recovered: true},
		},
		{
			name:     "failures ended before the fault did: the first success sent after the end",
			outcomes: []Outcome{at(base, 0, 10, false), at(base, 150, 20, true), at(base, 300, 25, true)},
			faultEnd: ms(200),
			want:     Recovery{Disrupted: true, Unhealthy: 1, Recovered: true, After: 125 * time.Millisecond},
		},
		{
			name: "failures after the fault's end: the first success sent after the last failure's answer",
			outcomes: []Outcome{
				at(base, 100, 10, false), at(base, 250, 50, false), // last failure answered at 300
				at(base, 260, 100, true), // sent before the last failure was answered: not the point
				at(base, 310, 40, true),  // answered at 350
				at(base, 400, 10, true),
			},
			faultEnd: ms(200),
			want:     Recovery{Disrupted: true, Unhealthy: 2, Recovered: true, After: 150 * time.Millisecond},
		},
		{
			name:     "nothing healthy after the last failure",
			outcomes: []Outcome{at(base, 0, 10, true), at(base, 300, 10, false)},
			faultEnd: ms(200),
			want:     Recovery{Disrupted: true, Unhealthy: 1},
		},
		{
			name:     "the load ended before the fault did",
			outcomes: []Outcome{at(base, 0, 10, true), at(base, 50, 10, true)},
			faultEnd: ms(200),
			want:     Recovery{LoadEndedFirst: true},
		},
		{
			name:     "unsent creates are ignored",
			outcomes: []Outcome{{Name: "never"}, at(base, 300, 10, true)},
			faultEnd: ms(200),
			want:     Recovery{Recovered: true},
		},
		{name: "no outcomes", faultEnd: ms(0), want: Recovery{LoadEndedFirst: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := computeRecovery(c.outcomes, c.faultEnd); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestOutcomeClassification(t *testing.T) {
	sent := time.Now()
	cases := []struct {
		name                      string
		o                         Outcome
		healthy, refused, byDesig bool
		key                       string
	}{
		{name: "acknowledged", o: Outcome{UID: "u", Sent: sent}, healthy: true},
		{name: "refused by design", o: Outcome{Marked: true, Sent: sent, Code: 403, Reason: "Forbidden", Message: `admission webhook "x" denied the request: ` + refusalMessage + ": …"},
			healthy: true, refused: true, byDesig: true, key: "403 Forbidden: refused by design"},
		{name: "marked but admitted", o: Outcome{Marked: true, UID: "u", Sent: sent}},
		{name: "marked, failed otherwise", o: Outcome{Marked: true, Sent: sent, Code: 500, Reason: "InternalError", Message: `Internal error occurred: failed calling webhook "x": connection refused`},
			refused: true, key: "500 InternalError: failed calling webhook"},
		{name: "breaker open", o: Outcome{Sent: sent, Code: 500, Reason: "InternalError", Message: `failed calling webhook "x": circuit breaker open; not called; the next probe call is in 1s (at 2026-01-01T00:00:00Z)`},
			refused: true, key: "500 InternalError: circuit breaker open"},
		{name: "timeout: unknown outcome", o: Outcome{Sent: sent, Code: 504, Reason: "Timeout", Message: "the create of soak-00042 timed out"},
			key: "504 Timeout: the create of <pod> timed out"},
		{name: "conflict: the object exists", o: Outcome{Sent: sent, Code: 409, Reason: "AlreadyExists", Message: "exists"},
			key: "409 AlreadyExists: exists"},
		{name: "rate limited: refused before any write", o: Outcome{Sent: sent, Code: 429, Reason: "TooManyRequests", Message: "slow down"},
			refused: true, key: "429 TooManyRequests: slow down"},
		{name: "transport", o: Outcome{Sent: sent, Reason: "transport", Message: "EOF"}, key: "transport: EOF"},
		{name: "no reason", o: Outcome{Sent: sent, Code: 500, Message: "rpc error: code = Unavailable"}, key: "500: rpc error: code = Unavailable"},
		{name: "never sent", o: Outcome{}, key: "transport: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.o.Healthy(); got != c.healthy {
				t.Errorf("Healthy() = %v, want %v", got, c.healthy)
			}
			if got := c.o.DefinitelyRefused(); got != c.refused {
				t.Errorf("DefinitelyRefused() = %v, want %v", got, c.refused)
			}
			if got := c.o.RefusedByDesign(); got != c.byDesig {
				t.Errorf("RefusedByDesign() = %v, want %v", got, c.byDesig)
			}
			if got := c.o.FailureKey(); got != c.key {
				t.Errorf("FailureKey() = %q, want %q", got, c.key)
			}
		})
	}
}

func TestDescribeError(t *testing.T) {
	code, reason, msg := describeError(errString(`Post "https://127.0.0.1:1/api/v1/namespaces/soak/pods": read tcp: connection reset by peer`))
	if code != 0 || reason != "transport" || msg != "connection reset" {
		t.Errorf("got %d %q %q", code, reason, msg)
	}
	long := make([]byte, 500)
	for i := range long {
		long[i] = 'x'
	}
	if _, _, msg := describeError(errString(long)); len(msg) > maxOutcomeMessage+len("…") {
		t.Errorf("a long message kept %d bytes", len(msg))
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestFindPanics(t *testing.T) {
	dir := t.TempDir()
	log := dir + "/kube-apiserver.log"
	text := `I1123 01:55:10.1 1 server.go:1] Serving securely
E1123 01:55:10.894748    8087 timeout.go:121] "Observed a panic" panic=<
	runtime error: invalid memory address or nil pointer dereference
	goroutine 10103 [running]:
	panic({0x3ec1620?, 0x77b03f0?})
		runtime/panic.go:860 +0x13a
 >
E1123 01:55:10.894800    8087 wrap.go:57] "apiserver panic'd" method="POST" URI="/apis/x.io/v1/namespaces/a/widgets" auditID="1"
http2: panic serving 127.0.0.1:48184: runtime error: invalid memory address or nil pointer dereference
I1123 01:55:11.1 1 flags.go:1] FLAG: --dont-panic="false"
2026/11/23 01:55:12 http: panic serving 127.0.0.1:5555: boom
panic: runtime error: index out of range
`
	if err := os.WriteFile(log, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := FindPanics(log, dir+"/missing.log")
	if err != nil {
		t.Fatal(err)
	}
	if p.Count != 3 || len(p.First) != 3 || !strings.Contains(p.First[0], "Observed a panic") {
		t.Errorf("got %d panics %q, want 3 (one report each, the flag line not one)", p.Count, p.First)
	}
	if want := map[string]int{"POST /apis/x.io/v1/namespaces/a/widgets": 1}; !maps.Equal(p.Requests, want) {
		t.Errorf("panicked serving %v, want %v", p.Requests, want)
	}
}
