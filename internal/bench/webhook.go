package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-k8s/portcullis/internal/harness"
	"github.com/portcullis-k8s/portcullis/internal/pki"
)

const (
	// securityContextDenyPath serves the webhook equivalent of SecurityContextDeny.
	securityContextDenyPath = "/securitycontextdeny"
	// holdPathPrefix serves webhooks that hold every request, then allow it unchanged.
	holdPathPrefix = "/hold/"
	// immediatePathPrefix serves webhooks that answer at once: validating ones allow,
	// mutating ones add an annotation of their own, so that every call changes the object.
	immediatePathPrefix = "/immediate/"
	// denyPath serves a webhook that denies at once.
	denyPath = "/deny"
	// warnDenyPath serves a webhook that denies after warnHold (table 5's webhook in Warn).
	warnDenyPath = "/warn-deny"
	// warnHold is how long the webhook in Warn takes to answer.
	warnHold = 50 * time.Millisecond
	// policyMarker is in every refusal of the policies the harness installs, so a probe
	// can tell their refusals from anything else.
	policyMarker = "bench-securitycontextdeny"
	// maxReviewBytes bounds what the server reads of a review.
	maxReviewBytes = 3 << 20
)

// webhookServer is an HTTPS admission webhook server on 127.0.0.1, counting the calls
// each path receives.
type webhookServer struct {
	baseURL  string
	caBundle []byte
	// hold is how long the hold webhooks keep each request.
	hold   time.Duration
	server *http.Server

	mu    sync.Mutex
	calls map[string]int
	// spent is what the immediate webhooks spent on each object, by its name, from each
	// handler's start to its answer written; nil (nothing recorded) until takeSpent.
	spent map[string]Spent
	// lastReview is the last review each immediate webhook received, by path, as sent.
	lastReview map[string][]byte
}

// Spent is what the webhooks spent on one object's requests: each call's handling, from
// the handler's start to its answer written.
type Spent struct {
	Calls []Interval
}

// Interval is a span of wall time.
type Interval struct{ Start, End time.Time }

// Time is how long at least one of the calls was being handled: their sum when the server
// called them one after another (mutating webhooks), less when it called them in parallel
// (validating ones), whose handling overlaps.
func (s Spent) Time() time.Duration {
	calls := slices.SortedFunc(slices.Values(s.Calls), func(a, b Interval) int { return a.Start.Compare(b.Start) })
	var total time.Duration
	var covered time.Time // the end of the union so far
	for _, c := range calls {
		start := c.Start
		if start.Before(covered) {
			start = covered
		}
		if c.End.After(start) {
			total += c.End.Sub(start)
			covered = c.End
		}
	}
	return total
}

// startWebhookServer writes a CA and a serving certificate for 127.0.0.1 into dir and serves
// on a fresh port until close.
func startWebhookServer(dir string, hold time.Duration) (*webhookServer, error) {
	cert, caPEM, err := pki.LoopbackServer(dir, "webhook")
	if err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &webhookServer{
		baseURL:  "https://" + listener.Addr().String(),
		caBundle: caPEM,
		hold:     hold,
		calls:    map[string]int{},

		lastReview: map[string][]byte{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc(securityContextDenyPath, s.serveSecurityContextDeny)
	mux.HandleFunc(holdPathPrefix, s.serveHold)
	mux.HandleFunc(immediatePathPrefix, s.serveImmediate)
	mux.HandleFunc(denyPath, s.serveDeny)
	mux.HandleFunc(warnDenyPath, s.serveWarnDeny)
	s.server = harness.HTTPSServer(mux, cert)
	go func() { _ = s.server.ServeTLS(listener, "", "") }()
	return s, nil
}

func (s *webhookServer) close() error { return s.server.Close() }

// clientConfig reaches path on this server by URL, trusting the server's CA.
func (s *webhookServer) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	url := s.baseURL + path
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: s.caBundle}
}

// callCount returns how many reviews path has received.
func (s *webhookServer) callCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

func (s *webhookServer) count(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[path]++
}

// spend records a call about the object name handled from start to now.
func (s *webhookServer) spend(name string, start time.Time) {
	end := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spent == nil {
		return
	}
	sp := s.spent[name]
	sp.Calls = append(sp.Calls, Interval{Start: start, End: end})
	s.spent[name] = sp
}

// takeSpent returns what the immediate webhooks spent by object name since the last take,
// and records from now on.
func (s *webhookServer) takeSpent() map[string]Spent {
	s.mu.Lock()
	defer s.mu.Unlock()
	spent := s.spent
	s.spent = map[string]Spent{}
	return spent
}

// stopSpending stops recording what the webhooks spend.
func (s *webhookServer) stopSpending() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spent = nil
}

// holdPath is the path of the i-th hold webhook of a kind ("validating" or "mutating").
func holdPath(kind string, i int) string { return fmt.Sprintf("%s%s/%d", holdPathPrefix, kind, i) }

// serveHold keeps the request for the server's hold, then allows it unchanged.
func (s *webhookServer) serveHold(w http.ResponseWriter, r *http.Request) {
	review, ok := readReview(w, r)
	if !ok {
		return
	}
	s.count(r.URL.Path)
	timer := time.NewTimer(s.hold)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.Context().Done():
		return
	}
	writeReview(w, &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true})
}

// immediatePath is the path of the i-th immediate webhook of a kind.
func immediatePath(kind string, i int) string {
	return fmt.Sprintf("%s%s/%d", immediatePathPrefix, kind, i)
}

// serveImmediate answers at once; under the mutating kind's paths with a patch adding the
// annotation bench.portcullis.dev/<path's index>. It records what it spent on each call:
// the request's time at the API server is the create's latency less that.
func (s *webhookServer) serveImmediate(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	review, body, ok := readReviewBody(w, r)
	if !ok {
		return
	}
	s.count(r.URL.Path)
	s.mu.Lock()
	s.lastReview[r.URL.Path] = body
	s.mu.Unlock()
	defer func() { s.spend(review.Request.Name, start) }()
	response := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	if strings.HasPrefix(r.URL.Path, immediatePathPrefix+mutatingKind+"/") {
		var pod struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(review.Request.Object.Raw, &pod); err != nil {
			http.Error(w, "decoding the pod: "+err.Error(), http.StatusBadRequest)
			return
		}
		key := "bench.portcullis.dev~1" + strings.TrimPrefix(r.URL.Path, immediatePathPrefix+mutatingKind+"/")
		patch := fmt.Sprintf(`[{"op":"add","path":"/metadata/annotations/%s","value":"x"}]`, key)
		if pod.Metadata.Annotations == nil {
			patch = fmt.Sprintf(`[{"op":"add","path":"/metadata/annotations","value":{}},{"op":"add","path":"/metadata/annotations/%s","value":"x"}]`, key)
		}
		patchType := admissionv1.PatchTypeJSONPatch
		response.Patch, response.PatchType = []byte(patch), &patchType
	}
	writeReview(w, response)
}

// serveDeny denies at once.
func (s *webhookServer) serveDeny(w http.ResponseWriter, r *http.Request) {
	review, ok := readReview(w, r)
	if !ok {
		return
	}
	s.count(r.URL.Path)
	writeReview(w, &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
		Result: &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: "bench: denied at once"}})
}

// serveWarnDeny denies after warnHold (a webhook's own latency; the request's end cuts it
// short).
func (s *webhookServer) serveWarnDeny(w http.ResponseWriter, r *http.Request) {
	review, ok := readReview(w, r)
	if !ok {
		return
	}
	s.count(r.URL.Path)
	timer := time.NewTimer(warnHold)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.Context().Done():
		return
	}
	writeReview(w, &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
		Result: &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: "bench: pods need an owner label"}})
}

// serveSecurityContextDeny refuses what the SecurityContextDeny plugin refuses.
func (s *webhookServer) serveSecurityContextDeny(w http.ResponseWriter, r *http.Request) {
	review, ok := readReview(w, r)
	if !ok {
		return
	}
	s.count(r.URL.Path)
	response := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	var pod corev1.Pod
	if err := json.Unmarshal(review.Request.Object.Raw, &pod); err != nil {
		response.Allowed = false
		response.Result = &metav1.Status{Code: http.StatusBadRequest, Message: policyMarker + ": the object is not a Pod: " + err.Error()}
	} else if forbidden := securityContextViolations(&pod, review.Request.SubResource); len(forbidden) > 0 {
		response.Allowed = false
		response.Result = &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: policyMarker + ": " + strings.Join(forbidden, "; ")}
	}
	writeReview(w, response)
}

// securityContextViolations lists the fields SecurityContextDeny forbids that pod sets: on
// the ephemeralcontainers subresource only those of ephemeral containers, which are all that
// can change there; otherwise those of the pod and of its init and regular containers.
func securityContextViolations(pod *corev1.Pod, subresource string) []string {
	var out []string
	containers := func(list string, scs []*corev1.SecurityContext) {
		for i, sc := range scs {
			if sc == nil {
				continue
			}
			path := field.NewPath("spec", list).Index(i).Child("securityContext")
			if sc.SELinuxOptions != nil {
				out = append(out, path.Child("seLinuxOptions").String()+" is forbidden")
			}
			if sc.RunAsUser != nil {
				out = append(out, path.Child("runAsUser").String()+" is forbidden")
			}
		}
	}
	if subresource == "ephemeralcontainers" {
		scs := make([]*corev1.SecurityContext, len(pod.Spec.EphemeralContainers))
		for i := range pod.Spec.EphemeralContainers {
			scs[i] = pod.Spec.EphemeralContainers[i].SecurityContext
		}
		containers("ephemeralContainers", scs)
		return out
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		if sc.SupplementalGroups != nil {
			out = append(out, "pod.Spec.SecurityContext.SupplementalGroups is forbidden")
		}
		if sc.SELinuxOptions != nil {
			out = append(out, "pod.Spec.SecurityContext.SELinuxOptions is forbidden")
		}
		if sc.RunAsUser != nil {
			out = append(out, "pod.Spec.SecurityContext.RunAsUser is forbidden")
		}
		if sc.FSGroup != nil {
			out = append(out, "pod.Spec.SecurityContext.FSGroup is forbidden")
		}
	}
	securityContexts := func(cs []corev1.Container) []*corev1.SecurityContext {
		scs := make([]*corev1.SecurityContext, len(cs))
		for i := range cs {
			scs[i] = cs[i].SecurityContext
		}
		return scs
	}
	containers("initContainers", securityContexts(pod.Spec.InitContainers))
	containers("containers", securityContexts(pod.Spec.Containers))
	return out
}

// readReview decodes an admission.k8s.io/v1 AdmissionReview, answering 400 itself when it
// cannot.
func readReview(w http.ResponseWriter, r *http.Request) (*admissionv1.AdmissionReview, bool) {
	review, _, ok := readReviewBody(w, r)
	return review, ok
}

// readReviewBody is readReview, also returning the review as sent.
func readReviewBody(w http.ResponseWriter, r *http.Request) (*admissionv1.AdmissionReview, []byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes))
	if err != nil {
		http.Error(w, "reading the review: "+err.Error(), http.StatusBadRequest)
		return nil, nil, false
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		http.Error(w, "decoding the review: "+err.Error(), http.StatusBadRequest)
		return nil, nil, false
	}
	if review.Request == nil {
		http.Error(w, "the review has no request", http.StatusBadRequest)
		return nil, nil, false
	}
	return &review, body, true
}

// reviewSent returns the last review the webhook at path received, as sent.
func (s *webhookServer) reviewSent(path string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, ok := s.lastReview[path]
	if !ok {
		return nil, fmt.Errorf("%s has received no review", path)
	}
	return body, nil
}

func writeReview(w http.ResponseWriter, response *admissionv1.AdmissionResponse) {
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: response,
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}
