package webhook

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/component-base/tracing"
	"k8s.io/klog/v2"

	"github.com/portcullis-k8s/portcullis/pkg/admission/trace"
)

// defaultProbeTimeout bounds a probe of a webhook without timeoutSeconds (the API defaults
// it to 10 s).
const defaultProbeTimeout = 10 * time.Second

// Prober sends a mutating webhook its own output again — a dry-run request whose object is
// the object as the webhook's patch left it — and reports a webhook whose answer changes
// that object again: it is not idempotent, and breaks when reinvoked
// (reinvocationPolicy IfNeeded) or when a controller re-applies what it produced. Probes
// run off the request path, at most MaxInFlight at once; a sampled call that finds every
// slot busy is not probed. Only the object snapshots of the probes under way are held.
type Prober struct {
	oneIn   uint64
	seen    atomic.Uint64
	slots   chan struct{}
	metrics *Metrics
	// wg counts the probes under way, for tests.
	wg sync.WaitGroup
}

// NewProber returns a prober with settings.
func NewProber(settings ProbeSettings, metrics *Metrics) *Prober {
	return &Prober{oneIn: uint64(settings.OneIn), slots: make(chan struct{}, settings.MaxInFlight), metrics: metrics}
}

// ProbeCall is a call whose output may be probed.
type ProbeCall struct {
	ClientManager *webhookutil.ClientManager
	Invocation    *generic.WebhookInvocation
	Hook          *admissionregistrationv1.MutatingWebhook
	// Attr is the call's attributes, holding the object as the webhook's patch left it.
	Attr *admission.VersionedAttributes
	// Output is that object's JSON.
	Output []byte
}

// Offer probes the call if it is sampled and a slot is free. It never blocks and never
// changes the request: the probe works on copies.
func (p *Prober) Offer(c ProbeCall) {
	if p == nil || !sideEffectsAllowDryRun(c.Hook.SideEffects) {
		return
	}
	if p.seen.Add(1)%p.oneIn != 0 {
		return
	}
	select {
	case p.slots <- struct{}{}:
	default:
		p.metrics.Probed(c.Hook.Name, ProbeSkipped)
		return
	}
	attr := probeAttributes(c.Attr)
	output := append([]byte(nil), c.Output...)
	p.wg.Go(func() {
		defer func() { <-p.slots }()
		p.probe(c, attr, output)
	})
}

// Wait waits for the probes under way.
func (p *Prober) Wait() { p.wg.Wait() }

func (p *Prober) probe(c ProbeCall, attr *admission.VersionedAttributes, output []byte) {
	timeout := OwnTimeout(c.Hook.TimeoutSeconds)
	if timeout == 0 {
		timeout = defaultProbeTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	logger := klog.Background().WithValues("webhook", c.Hook.Name, "configuration", c.Invocation.Webhook.GetConfigurationName(),
		"resource", attr.GetResource().String(), "operation", attr.GetOperation())
	call := &Call{ClientManager: c.ClientManager, Invocation: c.Invocation, Attr: attr, Encoded: &EncodedObjects{},
		Name: c.Hook.Name, SideEffects: c.Hook.SideEffects, Timeout: timeout, Mutating: true}
	var paths []string
	denied := ""
	_, err := call.Do(ctx, func(result *webhookrequest.AdmissionResponse, _ *tracing.Span) (Outcome, error) {
		if !result.Allowed {
			denied = "denied its own output"
			if result.Result != nil && result.Result.Message != "" {
				denied += ": " + result.Result.Message
			}
			return Succeeded, nil
		}
		if len(result.Patch) == 0 {
			return Succeeded, nil
		}
		patch, err := jsonpatch.DecodePatch(result.Patch)
		if err != nil {
			return Failed, err
		}
		again, err := patch.Apply(output)
		if err != nil {
			// A patch that cannot apply to its own output is no idempotent answer either.
			paths = trace.PatchPaths(result.Patch)
			return Succeeded, nil
		}
		paths = trace.ChangedPaths(output, again)
		return Succeeded, nil
	})
	switch {
	case err != nil:
		p.metrics.Probed(c.Hook.Name, ProbeFailed)
		logger.V(2).Info("Idempotency probe of a mutating webhook failed", "err", err)
	case denied != "":
		p.metrics.Probed(c.Hook.Name, ProbeNotIdempotent)
		logger.Info("Mutating webhook is not idempotent: it denied the object it produced", "reason", denied)
	case len(paths) > 0:
		p.metrics.Probed(c.Hook.Name, ProbeNotIdempotent)
		logger.Info("Mutating webhook is not idempotent: given its own output, it changed it again", "paths", paths)
	default:
		p.metrics.Probed(c.Hook.Name, ProbeIdempotent)
	}
}

// probeAttributes copies what a probe needs of a call's attributes, as a dry run: the
// request's own may change (later webhooks, conversion) once the call returns.
func probeAttributes(in *admission.VersionedAttributes) *admission.VersionedAttributes {
	var obj, old runtime.Object
	if o := VersionedObject(in); o != nil {
		obj = o.DeepCopyObject()
	}
	if o := VersionedOldObject(in); o != nil {
		old = o.DeepCopyObject()
	}
	var options runtime.Object
	if o := in.GetOperationOptions(); o != nil {
		options = o.DeepCopyObject()
	}
	record := admission.NewAttributesRecord(obj, old, in.GetKind(), in.GetNamespace(), in.GetName(), in.GetResource(), in.GetSubresource(),
		in.GetOperation(), options, true, in.GetUserInfo())
	return NewVersionedAttributes(record, obj, old, in.VersionedKind)
}

// sideEffectsAllowDryRun says whether a webhook may be sent a dry-run request.
func sideEffectsAllowDryRun(s *admissionregistrationv1.SideEffectClass) bool {
	return s != nil && (*s == admissionregistrationv1.SideEffectClassNone || *s == admissionregistrationv1.SideEffectClassNoneOnDryRun)
}
