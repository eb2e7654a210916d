package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/klog/v2"

	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
)

// Audit annotation key prefixes of softened calls, followed by round_R_index_I as upstream's
// webhook annotations are.
const (
	WouldDenyValidatingPrefix = "would-deny.validating.webhook.admission.portcullis.io/"
	WouldDenyMutatingPrefix   = "would-deny.mutation.webhook.admission.portcullis.io/"
	ShadowPatchPrefix         = "shadow-patch.mutation.webhook.admission.portcullis.io/"
)

// Softened is a webhook call whose verdict its enforcement mode does not let through.
type Softened struct {
	Name, Configuration string
	Mode                enforcement.Soften
	// AnnotationSuffix is round_R_index_I.
	AnnotationSuffix string
}

// wouldDenyRecord is the value of a would-deny audit annotation.
type wouldDenyRecord struct {
	Configuration string `json:"configuration"`
	Webhook       string `json:"webhook"`
	Mode          string `json:"mode"`
	// Outcome is OutcomeWouldDeny or OutcomeWouldFail.
	Outcome string `json:"outcome"`
	Message string `json:"message"`
}

// shadowPatchRecord is the value of a shadow-patch audit annotation: upstream's patch
// annotation, with the mode.
type shadowPatchRecord struct {
	Configuration string          `json:"configuration"`
	Webhook       string          `json:"webhook"`
	Mode          string          `json:"mode"`
	Patch         json.RawMessage `json:"patch"`
	PatchType     string          `json:"patchType"`
}

// DenialOf returns the message of a webhook's denial that a mode may admit: an answer with
// allowed false and a 4xx code (403 when it gives none). A failed call (which follows the
// failure policy) or a 5xx denial gives false.
// The message is the webhook's own, without the "admission webhook … denied the request: "
// that upstream puts before it.
func DenialOf(name string, err error) (string, bool) {
	var rejection *webhookutil.ErrWebhookRejection
	if !errors.As(err, &rejection) {
		return "", false
	}
	msg, ok := enforcement.DenialMessage(rejection.Status)
	return strings.TrimPrefix(msg, fmt.Sprintf("admission webhook %q denied the request: ", name)), ok
}

// deny records a denial admitted because of the mode, and returns the trace's verdict. The
// shadow pool counts it.
func (s Softened) deny(ctx context.Context, attr admission.Attributes, prefix, msg string) string {
	if s.Mode.Warn {
		warning.AddWarning(ctx, "", fmt.Sprintf("%s would deny this request (enforcement mode %s): %s", s.Name, s.Mode.Label, enforcement.OneLine(msg)))
	}
	if s.Mode.Audit {
		s.annotate(ctx, attr, prefix, wouldDenyRecord{Configuration: s.Configuration, Webhook: s.Name, Mode: s.Mode.Label, Outcome: OutcomeWouldDeny, Message: msg}, auditinternal.LevelMetadata)
	}
	return fmt.Sprintf("would deny (%s): %s", s.Mode.Label, msg)
}

// patch records a shadow webhook's patch, not applied, that would have changed paths. The
// shadow pool counts it.
func (s Softened) patch(ctx context.Context, attr admission.Attributes, patch []byte, paths []string) {
	if s.Mode.Warn {
		warning.AddWarning(ctx, "", fmt.Sprintf("%s would change %s (enforcement mode %s: its patch is not applied)", s.Name, strings.Join(paths, " "), s.Mode.Label))
	}
	if s.Mode.Audit {
		// At Request level and above only, as upstream's patch annotation: it may carry the
		// object's data.
		s.annotate(ctx, attr, ShadowPatchPrefix, shadowPatchRecord{Configuration: s.Configuration, Webhook: s.Name, Mode: s.Mode.Label,
			Patch: patch, PatchType: string(admissionv1.PatchTypeJSONPatch)}, auditinternal.LevelRequest)
	}
}

func (s Softened) annotate(ctx context.Context, attr admission.Attributes, prefix string, record any, level auditinternal.Level) {
	value, err := json.Marshal(record)
	if err == nil {
		err = attr.AddAnnotationWithLevel(prefix+s.AnnotationSuffix, string(value), level)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Recording a softened webhook call in the audit event failed", "webhook", s.Name, "configuration", s.Configuration)
	}
}

// HookStep names a webhook's step of the admission trace.
func HookStep(name, configuration string) string {
	return fmt.Sprintf("webhook %s (%s)", name, configuration)
}

// Verdict is a call's verdict for the admission trace, from the call's error (nil: admitted),
// the webhook's failure policy and whether a check of ours (breaker, budget) skipped it.
func Verdict(callErr error, ignore, skipped bool) string {
	switch {
	case callErr == nil:
		return "admitted"
	case skipped && ignore:
		return "skipped, failed open: " + reasonOf(callErr).Error()
	case skipped:
		return "skipped, refused: " + reasonOf(callErr).Error()
	}
	var failed *webhookutil.ErrCallingWebhook
	if errors.As(callErr, &failed) {
		if ignore {
			return "failed open: " + failed.Reason.Error()
		}
		return "failed, refused: " + failed.Reason.Error()
	}
	var rejection *webhookutil.ErrWebhookRejection
	if errors.As(callErr, &rejection) {
		return fmt.Sprintf("denied (%d): %s", rejection.Status.ErrStatus.Code, rejection.Status.ErrStatus.Message)
	}
	return "error: " + callErr.Error()
}
