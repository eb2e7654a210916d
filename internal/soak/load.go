package soak

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// loadLabel marks every pod a load creates, with the run's name as its value.
const loadLabel = "soak.portcullis.dev/load"

// Outcome is what became of one pod create.
type Outcome struct {
	Name string
	// Marked is true for the pods the failing validating webhook refuses by design.
	Marked bool
	// Sent and Done bound the create as the client saw it.
	Sent, Done time.Time
	// UID is the acknowledged pod's uid; empty when the create failed.
	UID string
	// Code, Reason and Message describe a failure: the HTTP status and the Status reason
	// when the server answered, Code 0 and Reason "transport" when it did not.
	Code    int
	Reason  string
	Message string
}

// Acked reports whether the server acknowledged the create (201 and a uid).
func (o Outcome) Acked() bool { return o.UID != "" }

// sent reports whether the create was sent at all (the run may end first).
func (o Outcome) sent() bool { return !o.Sent.IsZero() }

// RefusedByDesign reports a marked pod refused by the failing validating webhook.
func (o Outcome) RefusedByDesign() bool {
	return o.Marked && o.Code == http.StatusForbidden && strings.Contains(o.Message, refusalMessage)
}

// Healthy reports whether the outcome is what a healthy system answers: an unmarked pod
// acknowledged, a marked one refused by design.
func (o Outcome) Healthy() bool {
	if o.Marked {
		return o.RefusedByDesign()
	}
	return o.Acked()
}

// DefinitelyRefused reports a failure the server answers before it writes anything: a
// client error (4xx, except 409, which says the object exists) or a failed webhook call.
// A pod so refused must not be stored.
func (o Outcome) DefinitelyRefused() bool {
	if o.Acked() || !o.sent() {
		return false
	}
	if o.Code >= 400 && o.Code < 500 && o.Code != http.StatusConflict {
		return true
	}
	return o.Code == http.StatusInternalServerError && strings.Contains(o.Message, "failed calling webhook")
}

// FailureKey names the failure for the report's "failed by reason" column, e.g.
// "500 InternalError: failed calling webhook" or "transport: connection reset".
func (o Outcome) FailureKey() string {
	if o.Acked() {
		return ""
	}
	if o.Code == 0 {
		return "transport: " + o.Message
	}
	key := strings.TrimSpace(fmt.Sprintf("%d %s", o.Code, o.Reason))
	switch {
	case o.RefusedByDesign():
		key += ": refused by design"
	case strings.Contains(o.Message, "circuit breaker open"):
		key += ": circuit breaker open"
	case strings.Contains(o.Message, "failed calling webhook"):
		key += ": failed calling webhook"
	default:
		key += ": " + truncate(podNames.ReplaceAllString(o.Message, "<pod>"), 80)
	}
	return key
}

// podNames matches the load's pod names, so that failures group by reason, not by pod.
var podNames = regexp.MustCompile(`soak-\d+`)

// LoadResult is what one run of creates recorded.
type LoadResult struct {
	Clients int
	// Outcomes holds one entry per pod, in the order of their names; those never sent (the
	// run's timeout) have a zero Sent.
	Outcomes []Outcome
	// Started and Finished bound the run: the first create sent, the last answered.
	Started, Finished time.Time
	// Latencies holds every acknowledged create's latency.
	Latencies *Histogram
}

// Elapsed is the run's wall time.
func (r *LoadResult) Elapsed() time.Duration { return r.Finished.Sub(r.Started) }

// Acked counts the acknowledged creates.
func (r *LoadResult) Acked() int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Acked() {
			n++
		}
	}
	return n
}

// Throughput is acknowledged creates per second.
func (r *LoadResult) Throughput() float64 {
	if r.Elapsed() <= 0 {
		return 0
	}
	return float64(r.Acked()) / r.Elapsed().Seconds()
}

// Failures counts the failed creates by FailureKey; refusals by design are among them.
func (r *LoadResult) Failures() map[string]int {
	out := map[string]int{}
	for _, o := range r.Outcomes {
		if o.sent() && !o.Acked() {
			out[o.FailureKey()]++
		}
	}
	return out
}

// Unsent counts the creates the run's timeout left unsent.
func (r *LoadResult) Unsent() int {
	n := 0
	for _, o := range r.Outcomes {
		if !o.sent() {
			n++
		}
	}
	return n
}

// podLoad is one bounded run of pod creates.
type podLoad struct {
	clients   []kubernetes.Interface
	namespace string
	run       string // the run's name: the pods' load label
	opts      LoadOptions
	// answered counts the creates answered so far; faults start on it.
	answered atomic.Int64
}

// podName is the i-th pod's name (from 1).
func podName(i int) string { return fmt.Sprintf("soak-%05d", i) }

// execute sends every create once, each client taking the next name as soon as it is done
// with the last (pausing after a failure), until all are sent or the timeout passes.
func (l *podLoad) execute(ctx context.Context) (*LoadResult, error) {
	if len(l.clients) == 0 || l.opts.Pods <= 0 {
		return nil, errors.New("a load needs at least one client and one pod")
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	result := &LoadResult{Clients: len(l.clients), Outcomes: make([]Outcome, l.opts.Pods)}
	for i := range result.Outcomes {
		n := i + 1
		result.Outcomes[i] = Outcome{Name: podName(n), Marked: n%l.opts.RefuseEvery == 0}
	}
	var (
		next       atomic.Int64
		wg         sync.WaitGroup
		histograms = make([]Histogram, len(l.clients))
	)
	result.Started = time.Now()
	for c, client := range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pods := client.CoreV1().Pods(l.namespace)
			backoff := time.Duration(0)
			for {
				i := int(next.Add(1)) - 1
				if i >= l.opts.Pods || ctx.Err() != nil {
					return
				}
				o := &result.Outcomes[i]
				o.Sent = time.Now()
				created, err := pods.Create(ctx, l.pod(o.Name, o.Marked), metav1.CreateOptions{})
				o.Done = time.Now()
				l.answered.Add(1)
				if err == nil {
					o.UID = string(created.UID)
					histograms[c].Record(o.Done.Sub(o.Sent))
					backoff = 0
					continue
				}
				o.Code, o.Reason, o.Message = describeError(err)
				if o.RefusedByDesign() {
					continue
				}
				backoff = min(max(2*backoff, l.opts.Backoff), l.opts.MaxBackoff)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
			}
		}()
	}
	wg.Wait()
	result.Latencies = &Histogram{}
	for i := range histograms {
		result.Latencies.Merge(&histograms[i])
	}
	for _, o := range result.Outcomes {
		if o.Done.After(result.Finished) {
			result.Finished = o.Done
		}
	}
	if result.Finished.IsZero() {
		result.Finished = result.Started
	}
	return result, nil
}

// pod is the pod every load creates: one container under a restricted-style security
// context, which every policy of the chain admits.
func (l *podLoad) pod(name string, marked bool) *corev1.Pod {
	labels := map[string]string{loadLabel: l.run}
	if marked {
		labels[refuseLabel] = "true"
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.k8s.io/pause:3.10",
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// maxOutcomeMessage bounds the part of an error message kept per create.
const maxOutcomeMessage = 160

// describeError returns the HTTP status, the Status reason and a prefix of the message of
// a failed request; Code 0 and Reason "transport" when no answer came.
func describeError(err error) (code int, reason, message string) {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return int(s.Code), string(s.Reason), truncate(s.Message, maxOutcomeMessage)
	}
	msg := err.Error()
	// Name the transport failure by its most telling part.
	for _, known := range []string{"connection refused", "connection reset", "EOF", "context deadline exceeded",
		"Client.Timeout", "http2: client connection lost", "broken pipe", "use of closed network connection"} {
		if strings.Contains(msg, known) {
			return 0, "transport", known
		}
	}
	return 0, "transport", truncate(msg, maxOutcomeMessage)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
