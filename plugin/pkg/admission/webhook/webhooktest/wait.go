package webhooktest

import (
	"net/http"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
)

// WaitCase is a case of the request's wait for a softened webhook that denies "not yet":
// MaxWait is appended to its enforcementModes entry; Result is what shadow_calls_total counts
// its verdict as; Recorded says whether the verdict is on the request.
type WaitCase struct {
	Name, MaxWait, Result string
	Recorded              bool
}

// WaitCases: unbounded, the verdict is waited for and recorded; with maxWait 0s it is not
// waited for (async); with a maxWait shorter than the call it is late.
var WaitCases = []WaitCase{
	{Name: "unbounded: waited for and recorded", Result: webhook.ShadowInTime, Recorded: true},
	{Name: "maxWait 0s: not waited for, async", MaxWait: ", maxWait: 0s", Result: webhook.ShadowAsync},
	{Name: "maxWait 100ms: waited that long, late", MaxWait: ", maxWait: 100ms", Result: webhook.ShadowLate},
}

// StartWaitServer serves softenedPath with a denial of "not yet", answered once another path
// has been called (so the verdict cannot come before the enforced call was made) when the
// case's verdict is recorded, and once release is called otherwise (after the plugin
// returned); every other path is answered by enforced.
func StartWaitServer(t testing.TB, tc WaitCase, softenedPath string, enforced Respond) (server *ReviewServer, release func()) {
	t.Helper()
	enforcedCalled, released := make(chan struct{}), make(chan struct{})
	var calledOnce, releaseOnce sync.Once
	server = StartReviewServer(t, func(r *http.Request, review *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if r.URL.Path == softenedPath {
			if tc.Recorded {
				<-enforcedCalled
			} else {
				<-released
			}
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "not yet", Code: http.StatusForbidden}}
		}
		calledOnce.Do(func() { close(enforcedCalled) })
		return enforced(r, review)
	})
	release = func() { releaseOnce.Do(func() { close(released) }) }
	t.Cleanup(release)
	return server, release
}
