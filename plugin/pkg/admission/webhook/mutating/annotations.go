package mutating

import (
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	upstreammutating "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/klog/v2"
)

// annotator adds a webhook call's audit annotations, under stock's keys and with stock's
// values, so that audit pipelines read our dispatch as they read stock's.
type annotator struct {
	attr                                *admission.VersionedAttributes
	failedOpenKey, patchKey, mutatedKey string
	webhook, configuration              string
}

func newAnnotator(attr *admission.VersionedAttributes, round, index int, webhook, configuration string) *annotator {
	suffix := fmt.Sprintf("round_%d_index_%d", round, index)
	return &annotator{
		attr:          attr,
		failedOpenKey: upstreammutating.MutationAuditAnnotationFailedOpenKeyPrefix + suffix,
		patchKey:      upstreammutating.PatchAuditAnnotationPrefix + suffix,
		mutatedKey:    upstreammutating.MutationAuditAnnotationPrefix + suffix,
		webhook:       webhook,
		configuration: configuration,
	}
}

func (a *annotator) addFailedOpenAnnotation() {
	if err := a.attr.Attributes.AddAnnotation(a.failedOpenKey, a.webhook); err != nil {
		klog.Warningf("Failed to set failed-open annotation %s for mutating webhook %s: %v", a.failedOpenKey, a.webhook, err)
	}
}

func (a *annotator) addMutationAnnotation(mutated bool) {
	value, err := utiljson.Marshal(upstreammutating.MutationAuditAnnotation{Configuration: a.configuration, Webhook: a.webhook, Mutated: mutated})
	if err != nil {
		klog.Warningf("Failed to compose the mutation annotation of mutating webhook %s: %v", a.webhook, err)
		return
	}
	if err := a.attr.Attributes.AddAnnotation(a.mutatedKey, string(value)); err != nil {
		klog.Warningf("Failed to set mutation annotation %s for mutating webhook %s: %v", a.mutatedKey, a.webhook, err)
	}
}

// addPatchAnnotation records a JSON patch; at audit level Request and above only, since it
// may carry the object's data.
func (a *annotator) addPatchAnnotation(patch interface{}) {
	value, err := utiljson.Marshal(upstreammutating.PatchAuditAnnotation{
		Configuration: a.configuration, Webhook: a.webhook, Patch: patch, PatchType: string(admissionv1.PatchTypeJSONPatch),
	})
	if err != nil {
		klog.Warningf("Failed to compose the patch annotation of mutating webhook %s: %v", a.webhook, err)
		return
	}
	if err := a.attr.Attributes.AddAnnotationWithLevel(a.patchKey, string(value), auditinternal.LevelRequest); err != nil {
		// Not the patch itself: it may hold secrets.
		klog.Warningf("Failed to set patch annotation %s for mutating webhook %s of configuration %s", a.patchKey, a.webhook, a.configuration)
	}
}
