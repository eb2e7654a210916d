package webhook

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/portcullis-k8s/portcullis/pkg/admission/trace"
)

// testTraceRetriedWrite: a patch the server retries because another write changed the
// object while the patch was being admitted gets one trace, whose attempts the audit event
// keeps apart: each attempt's steps under keys of their own, the last attempt's included
// (upstream makes new admission records per attempt; the audit event keeps a key's first
// value).
//
// The conflict is made deterministic by the mutating webhook itself: at its first call for
// the patch it updates the ConfigMap through the API (committed before it answers), so the
// patch's write, checked against the revision it read, conflicts and the server admits the
// patch again on the fresh object.
func testTraceRetriedWrite(t *testing.T, e *env, c *cluster) {
	k := newCase(c, rolloutID)
	ns := k.namespace(t, map[string]string{"trace-retry": "yes"})
	const manager = "portcullis-retried-patch"
	var mu sync.Mutex
	calls, wrote := 0, false
	var writeErr error
	e.hooks.handle(k.path("conflict"), func(call *call) *admissionv1.AdmissionResponse {
		// The patch's calls are told by its field manager: the webhook's own write, or any
		// other, is admitted at once.
		if !strings.Contains(string(call.Request.Options.Raw), `"fieldManager":"`+manager+`"`) {
			return nil
		}
		mu.Lock()
		calls++
		first := !wrote
		wrote = true
		mu.Unlock()
		if first {
			ctx := requestContext(t)
			cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "retried", metav1.GetOptions{})
			if err == nil {
				cm.Labels["writer"] = "webhook"
				_, err = c.Client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			}
			mu.Lock()
			writeErr = err
			mu.Unlock()
		}
		return nil
	})
	c.createMutating(t, mutatingConfig(k.configName("retry"), mutatingHook(k.hookName("conflict"), e.hooks.clientConfig(k.path("conflict")),
		k.selector(map[string]string{"trace-retry": "yes"}), configMapRule(opUpdate))))
	k.mustCreateConfigMap(t, k.configMap(ns, "retried", nil))

	// The webhook's configuration reaches the server through an informer: patch until the
	// webhook sees the patch (each try a patch of its own, asking for a new value).
	try := 0
	eventually(t, pollTimeout, "the webhook to be called for the patch", func(ctx context.Context) (bool, error) {
		try++
		patch := fmt.Sprintf(`{"data":{"key":"v%d"}}`, try)
		if _, err := c.Client.CoreV1().ConfigMaps(ns).Patch(ctx, "retried", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager}); err != nil {
			return false, err
		}
		mu.Lock()
		defer mu.Unlock()
		return wrote, nil
	})
	mu.Lock()
	attempts, err := calls, writeErr
	mu.Unlock()
	if err != nil {
		t.Fatalf("the webhook's own write: %v", err)
	}
	if attempts < 2 {
		t.Fatalf("the webhook was called %d times for the patch it made conflict; want it admitted again", attempts)
	}

	var annotations map[string]string
	eventually(t, pollTimeout, "the audit event of the retried patch", func(context.Context) (bool, error) {
		event, err := findPatchAuditEvent(c.auditLog, ns, "retried", try)
		if event != nil {
			annotations = event.Annotations
		}
		return event != nil, err
	})
	// Each attempt's webhook step and validating steps are in the event, under its own keys.
	hookStep := regexp.MustCompile(`^` + regexp.QuoteMeta(trace.AuditAnnotationPrefix) + `(?:attempt-([0-9]+)-)?mutating-[0-9]+-1$`)
	hooked := map[int]bool{}
	validated := map[int]bool{}
	for key, value := range annotations {
		if m := hookStep.FindStringSubmatch(key); m != nil && strings.HasPrefix(value, "webhook "+k.hookName("conflict")+" ("+k.configName("retry")+"): admitted") {
			n := 1
			if m[1] != "" {
				n, _ = strconv.Atoi(m[1])
			}
			hooked[n] = true
		}
		rest := strings.TrimPrefix(key, trace.AuditAnnotationPrefix)
		n := 1
		if after, ok := strings.CutPrefix(rest, "attempt-"); ok {
			number, tail, _ := strings.Cut(after, "-")
			n, _ = strconv.Atoi(number)
			rest = tail
		}
		if strings.HasPrefix(rest, "validating-") {
			validated[n] = true
		}
	}
	for n := 1; n <= attempts; n++ {
		if !hooked[n] || !validated[n] {
			t.Errorf("attempt %d of %d: the audit event has the webhook's step %v, validating steps %v; annotations:\n%s", n, attempts, hooked[n], validated[n], formatAnnotations(annotations))
		}
	}
}

// findPatchAuditEvent finds the ResponseComplete event of the patch of ns/name that set its
// key to v<try>.
func findPatchAuditEvent(path, ns, name string, try int) (*auditv1.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	want := fmt.Sprintf(`"data":{"key":"v%d"}`, try)
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var event auditv1.Event
		if err := json.Unmarshal(scanner.Bytes(), &event); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if event.Verb == "patch" && event.Stage == auditv1.StageResponseComplete && event.ObjectRef != nil &&
			event.ObjectRef.Namespace == ns && event.ObjectRef.Name == name && event.RequestObject != nil && strings.Contains(string(event.RequestObject.Raw), want) {
			return &event, nil
		}
	}
	return nil, scanner.Err()
}

func formatAnnotations(annotations map[string]string) string {
	var b strings.Builder
	for key, value := range annotations {
		fmt.Fprintf(&b, "  %s: %s\n", key, value)
	}
	return b.String()
}
