// Package initializers is the Initializers admission plugin, removed upstream in 1.14: a new
// object that an InitializerConfiguration's rules match is recorded as pending its
// initializers, in order, until each has removed itself; a pod is also held by a scheduling
// gate per initializer, so that it does not run before they are done.
package initializers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"

	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/internal/readiness"
)

// PluginName is the name of the plugin.
const PluginName = "Initializers"

// ReadinessCheckName is the plugin's /readyz check.
const ReadinessCheckName = "portcullis-initializers-configurations"

// deleteTimeout bounds the deletion of an object whose initialization failed.
const deleteTimeout = 30 * time.Second

// InitializeVerb is the verb a user needs on a resource to set or change its objects'
// pending initializers, as in 1.13.
const InitializeVerb = "initialize"

// Register registers the plugin. It takes no configuration: InitializerConfigurations are
// objects of the API.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(), nil
	})
}

// Plugin is the Initializers admission plugin.
type Plugin struct {
	*admission.Handler
	authorizer    authorizer.Authorizer
	dynamicClient dynamic.Interface
	drained       <-chan struct{}
	// clientAs is a loopback client that impersonates a user: the requester who set a
	// failure result deletes the object through it.
	clientAs func(user.Info) (dynamic.Interface, error)

	// configurations are the InitializerConfigurations sorted by name, replaced whole on
	// every change, so that a request reads them without a lock or a copy.
	configurations atomic.Pointer[[]*admissionregistrationv1alpha1.InitializerConfiguration]
	ready          func() bool
	readyTimeout   time.Duration
	// deletions are the deletions of failed objects under way, for tests.
	deletions sync.WaitGroup
	// deleteRetries bound the tries of a deletion the server does not answer.
	deleteRetries wait.Backoff
	// attempts count, per request (audit ID) and object (UID) whose failure result
	// scheduled a deletion, the admission attempts of that update: the storage runs
	// admission again when it judged a stale cached copy, and only a deletion scheduled by
	// the request's last attempt may run (*atomic.Int32 values).
	attempts sync.Map
}

// attemptKey names one request's update of one object. The audit ID is the client's to
// choose (the Audit-ID header): the requester's name is part of the key, so that only they
// could make one of their requests count as another's attempt.
type attemptKey struct {
	request, object types.UID
	user            string
}

var (
	_ admission.MutationInterface                   = &Plugin{}
	_ genericadmissioninit.WantsAuthorizer          = &Plugin{}
	_ genericadmissioninit.WantsDynamicClient       = &Plugin{}
	_ genericadmissioninit.WantsDrainedNotification = &Plugin{}
)

// New returns the plugin, handling CREATE and UPDATE.
func New() *Plugin {
	return &Plugin{
		Handler:       admission.NewHandler(admission.Create, admission.Update),
		ready:         func() bool { return false },
		readyTimeout:  readiness.DefaultTimeout,
		deleteRetries: defaultDeleteRetries,
	}
}

// SetAuthorizer receives the server's authorizer, which decides the initialize verb.
func (p *Plugin) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

// SetDynamicClient receives the loopback dynamic client, used to watch the
// InitializerConfigurations and to record why an object whose initialization failed could
// not be deleted.
func (p *Plugin) SetDynamicClient(client dynamic.Interface) { p.dynamicClient = client }

// SetLoopbackClientConfig receives the server's loopback client configuration, through
// which the plugin deletes an object whose initialization failed as the user who set the
// result. The server gives it once its admission chain is built, before it serves.
func (p *Plugin) SetLoopbackClientConfig(config *rest.Config) error {
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return fmt.Errorf("%s: %w", PluginName, err)
	}
	config = rest.CopyConfig(config)
	p.clientAs = func(u user.Info) (dynamic.Interface, error) {
		// One transport for every user: the impersonation is a header of each request.
		impersonating := *httpClient
		impersonating.Transport = transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
			UserName: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra(),
		}, httpClient.Transport)
		return dynamic.NewForConfigAndClient(config, &impersonating)
	}
	return nil
}

// SetDrainedNotification receives the channel closed when the server has drained.
func (p *Plugin) SetDrainedNotification(drained <-chan struct{}) { p.drained = drained }

// ValidateInitialization checks the plugin got what it needs and starts watching the
// InitializerConfigurations.
func (p *Plugin) ValidateInitialization() error {
	switch {
	case p.authorizer == nil:
		return fmt.Errorf("%s: missing authorizer", PluginName)
	case p.dynamicClient == nil:
		return fmt.Errorf("%s: missing dynamic client", PluginName)
	case p.drained == nil:
		return fmt.Errorf("%s: missing drained notification", PluginName)
	}
	ready, err := readiness.WatchSnapshot(p.dynamicClient, admissionregistrationv1alpha1.Resource, toTyped, p.drained, func(objs []any) {
		configs := make([]*admissionregistrationv1alpha1.InitializerConfiguration, 0, len(objs))
		for _, obj := range objs {
			if config, ok := obj.(*admissionregistrationv1alpha1.InitializerConfiguration); ok {
				configs = append(configs, config)
			}
		}
		p.setConfigurations(configs)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", PluginName, err)
	}
	p.ready = ready
	return nil
}

// setConfigurations replaces the configurations the plugin applies.
func (p *Plugin) setConfigurations(configs []*admissionregistrationv1alpha1.InitializerConfiguration) {
	sorted := sortedByName(configs)
	p.configurations.Store(&sorted)
}

// ReadinessCheck makes /readyz wait for the configurations to be listed, so that a ready
// server never creates an object without its initializers.
func (p *Plugin) ReadinessCheck() healthz.HealthChecker {
	return readiness.Check(ReadinessCheckName, "the InitializerConfigurations are not listed yet", p.ready)
}

// Admit records the pending initializers of a new object, and holds an update of an object
// pending initializers to 1.13's rules.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" && a.GetOperation() != admission.Update {
		// pods/binding, pods/eviction and the like create another kind of object.
		return nil
	}
	accessor, err := meta.Accessor(a.GetObject())
	if err != nil {
		// Objects without metadata cannot be initialized (1.13: fail open).
		return nil
	}
	switch a.GetOperation() {
	case admission.Create:
		return p.admitCreate(ctx, a, o, accessor)
	case admission.Update:
		old, err := meta.Accessor(a.GetOldObject())
		if err != nil {
			return nil
		}
		// A later attempt of an update whose failure result scheduled a deletion: that
		// deletion waits for this attempt's decision.
		if key, ok := attemptKeyOf(ctx, a, old); ok {
			if n, scheduled := p.attempts.Load(key); scheduled {
				n.(*atomic.Int32).Add(1)
			}
		}
		return p.admitUpdate(ctx, a, accessor, old)
	}
	return nil
}

// createDecision is what the first run of the plugin on a create decided: the pending
// initializers. The server runs the in-tree mutating plugins again when a webhook changed
// the object (k8s.io/apiserver's reinvocation); that run finds the plugin's own annotation
// and must neither take it for the creator's (and ask for initialize) nor let a webhook
// have changed the list in between: it applies the same decision again.
type createDecision struct{ pending []string }

func (p *Plugin) admitCreate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces, obj metav1.Object) error {
	reinvocation := a.GetReinvocationContext()
	if decided, ok := reinvocation.Value(PluginName).(createDecision); ok {
		p.record(a, obj, decided.pending)
		return nil
	}
	if _, failed := obj.GetAnnotations()[ResultAnnotation]; failed {
		return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), field.ErrorList{
			field.Forbidden(field.NewPath("metadata", "annotations").Key(ResultAnnotation), "an initialization result is set by an initializer, on update"),
		})
	}
	var pending []string
	if value, given := obj.GetAnnotations()[PendingAnnotation]; given {
		// The creator names the initializers, or none (a bypass): either needs initialize.
		if err := p.authorize(ctx, a, InitializeVerb, createDenied(obj)); err != nil {
			return err
		}
		var errs field.ErrorList
		if pending, errs = parsePending(value, nil); len(errs) > 0 {
			return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), errs)
		}
	} else {
		if isMirrorPod(a.GetObject()) {
			// Mirror pods are created and initialized by the kubelet before they appear in
			// the API.
			return nil
		}
		if !readiness.Wait(ctx, p.ready, p.readyTimeout) {
			return notReady(a)
		}
		if configs := p.configurations.Load(); configs != nil {
			pending = initializersFor(*configs, a.GetResource(), func() []schema.GroupVersionResource {
				if o == nil {
					return nil
				}
				return o.GetEquivalentResourceMapper().EquivalentResourcesFor(a.GetResource(), "")
			})
		}
	}
	reinvocation.SetValue(PluginName, createDecision{pending: pending})
	p.record(a, obj, pending)
	if len(pending) > 0 {
		klog.V(4).InfoS("Initializers: pending", "resource", a.GetResource(), "namespace", a.GetNamespace(), "name", a.GetName(), "initializers", pending)
	}
	return nil
}

// record writes a new object's pending list, and a pod's gates.
func (p *Plugin) record(a admission.Attributes, obj metav1.Object, pending []string) {
	setPending(obj, pending)
	if pod, ok := a.GetObject().(*api.Pod); ok && pod.Spec.NodeName == "" {
		// Gates are forbidden on a pod bound at creation: it is recorded, not held.
		for _, name := range pending {
			if !slices.ContainsFunc(pod.Spec.SchedulingGates, func(g api.PodSchedulingGate) bool { return g.Name == name }) {
				pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, api.PodSchedulingGate{Name: name})
			}
		}
	}
}

// createDenied is the refusal of a create that names its initializers. A controller that
// copies its owner's annotations (the Deployment controller, to a ReplicaSet) gets it while
// the owner is pending: the message says so, and that the create succeeds once the owner is
// initialized.
func createDenied(obj metav1.Object) string {
	const denied = "create with initializers denied"
	owner := metav1.GetControllerOfNoCopy(obj)
	if owner == nil {
		return denied
	}
	return fmt.Sprintf("%s (a controller that copies its owner's annotations creates it once its owner %s %s is initialized)", denied, owner.Kind, owner.Name)
}

func (p *Plugin) admitUpdate(ctx context.Context, a admission.Attributes, obj, old metav1.Object) error {
	stored, _ := parsePending(old.GetAnnotations()[PendingAnnotation], nil)
	// A list written while the plugin was off may hold empty names: they are no initializer,
	// and an object with nothing else is not pending.
	empty := func(name string) bool { return name == "" }
	current := slices.DeleteFunc(slices.Clone(stored), empty)
	value := obj.GetAnnotations()[PendingAnnotation]
	updated, errs := parsePending(value, stored)
	updated = slices.DeleteFunc(updated, empty)
	oldResult, newResult := old.GetAnnotations()[ResultAnnotation], obj.GetAnnotations()[ResultAnnotation]
	changed := !slices.Equal(current, updated) || oldResult != newResult
	if (changed || len(current) > 0) && stale(obj, old) {
		// Mutating admission runs before the store compares resource versions: a stale
		// copy would be judged against the stored list (an initializer that removed itself
		// since looks added back). Answer as the store would, so that clients retry.
		return apierrors.NewConflict(a.GetResource().GroupResource(), a.GetName(), errors.New(registry.OptimisticLockErrorMsg))
	}
	if changed {
		if a.GetSubresource() != "" {
			// A subresource's strategy may keep the caller's metadata (pods/status,
			// certificatesigningrequests/approval, namespaces/finalize do) without the spec
			// (a pod's gates could not follow the list), or drop it: either way the list and
			// the result change through the object only.
			return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), field.ErrorList{
				field.Forbidden(pendingPath, fmt.Sprintf("the pending initializers and the result change through the object, not its %s subresource", a.GetSubresource())),
			})
		}
		if len(errs) > 0 {
			return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), errs)
		}
		if !isRemoval(current, updated) {
			return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), field.ErrorList{
				field.Invalid(pendingPath, value, fmt.Sprintf("an update may only remove pending initializers (pending: %q)", formatPending(current))),
			})
		}
		if newResult != oldResult && len(current) == 0 {
			// 1.13: "field is immutable once initialization has completed". Without this, a
			// result would delete any object of a matched resource, pending or not.
			return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), field.ErrorList{
				field.Forbidden(resultPath, "field is immutable once initialization has completed: a result may only be set while initializers are pending"),
			})
		}
		if err := p.authorize(ctx, a, InitializeVerb, "update to the initialization of a resource denied"); err != nil {
			return err
		}
	}
	if newResult != "" && newResult != oldResult {
		return p.fail(ctx, a, old, newResult)
	}
	if pod, ok := a.GetObject().(*api.Pod); ok && a.GetSubresource() == "" {
		oldPod, _ := a.GetOldObject().(*api.Pod)
		if err := ungate(a, pod, oldPod, current, updated); err != nil {
			return err
		}
	}
	// The label follows the list; neither outlives it.
	setPending(obj, updated)
	return nil
}

// stale reports whether an update names a resource version other than the stored one's, as
// the store reads them: an update without one, or with 0, is unconditional, and a version
// that is no number is the store's to refuse.
func stale(obj, old metav1.Object) bool {
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil || rv == 0 {
		return false
	}
	stored, err := strconv.ParseUint(old.GetResourceVersion(), 10, 64)
	return err == nil && stored != 0 && rv != stored
}

// ungate removes the gates of the initializers an update removes, and refuses an update
// that removes the gate of one still pending: the pod would run before it is initialized.
func ungate(a admission.Attributes, pod, oldPod *api.Pod, current, updated []string) error {
	done := removed(current, updated)
	pod.Spec.SchedulingGates = slices.DeleteFunc(pod.Spec.SchedulingGates, func(g api.PodSchedulingGate) bool { return slices.Contains(done, g.Name) })
	if oldPod == nil {
		return nil
	}
	for _, name := range updated {
		hasGate := func(g api.PodSchedulingGate) bool { return g.Name == name }
		if slices.ContainsFunc(oldPod.Spec.SchedulingGates, hasGate) && !slices.ContainsFunc(pod.Spec.SchedulingGates, hasGate) {
			return admission.NewForbidden(a, fmt.Errorf("the scheduling gate %s holds the pod until the initializer %s is done: remove the initializer from %s, not the gate", name, name, PendingAnnotation))
		}
	}
	return nil
}

// fail answers the update that records a failure result with that result, and deletes the
// object once the request is done, as 1.13 deleted it. Not before: the storage retries an
// update that admission refuses on a cached object against the stored one, and would find
// it gone and answer 404 instead of the initializer's result.
//
// The deletion is the requester's, judged by the whole server as theirs: first as a dry run,
// now, whose refusal (by authorization, a policy or webhook on DELETE, or a webhook that
// cannot take a dry run) refuses the result; then for real, as them too. 1.13 deleted inside
// the storage, where no DELETE admission ran; here a policy on DELETE cannot be stepped
// around by a result.
func (p *Plugin) fail(ctx context.Context, a admission.Attributes, old metav1.Object, result string) error {
	background := metav1.DeletePropagationBackground
	status := failureStatus(result)
	requester := a.GetUserInfo()
	if p.clientAs == nil {
		return apierrors.NewInternalError(fmt.Errorf("%s: the server did not give the plugin its loopback client configuration: a failure result cannot delete the object", PluginName))
	}
	client, err := p.clientAs(requester)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("%s: a client as %s: %w", PluginName, requester.GetName(), err))
	}
	resource, namespace, name, uid := a.GetResource(), a.GetNamespace(), a.GetName(), old.GetUID()
	objects := client.Resource(resource).Namespace(namespace)
	judgeCtx, cancel := context.WithTimeout(ctx, deleteTimeout)
	// Background: a failed Job's or ReplicationController's pods go with it (their
	// deletion orphans them by default), as every dependent of a failed object.
	err = objects.Delete(judgeCtx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background, DryRun: []string{metav1.DryRunAll}})
	cancel()
	if err != nil {
		return deletionRefused(requester, err)
	}
	if a.IsDryRun() {
		return status
	}
	// The requester's own audit event names the deletion; the deletion's event is theirs too
	// (the server impersonating them).
	if err := a.AddAnnotation(DeletionAuditAnnotation, fmt.Sprintf("%s %s/%s (uid %s)", resource.GroupResource(), namespace, name, uid)); err != nil {
		klog.ErrorS(err, "Initializers: recording the deletion in the audit event", "resource", resource, "namespace", namespace, "name", name)
	}
	// This attempt's number among the request's attempts on the object.
	key, keyed := attemptKeyOf(ctx, a, old)
	var attempts *atomic.Int32
	var mine int32 = 1
	if keyed {
		first := &atomic.Int32{}
		first.Store(1)
		n, loaded := p.attempts.LoadOrStore(key, first)
		attempts = n.(*atomic.Int32)
		if loaded {
			mine = attempts.Load() // Admit counted this attempt
		}
	}
	p.deletions.Go(func() {
		select {
		case <-ctx.Done():
		case <-p.drained:
			klog.InfoS("Initializers: the server stopped before deleting an object whose initialization failed; it stays pending", "resource", resource, "namespace", namespace, "name", name)
			return
		}
		if keyed {
			p.attempts.CompareAndDelete(key, attempts)
			if last := attempts.Load(); last != mine {
				// The storage judged the update again (this attempt saw a stale copy): the
				// last attempt's decision stands, and deletes if it failed the object.
				return
			}
		}
		err := p.deleteFailed(objects, name, uid, &background)
		switch {
		case err == nil:
			klog.InfoS("Initializers: initialization failed; object deleted", "resource", resource, "namespace", namespace, "name", name, "user", requester.GetName(), "result", status.ErrStatus.Message)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone already, or deleted and created again (another UID): not this object's.
		default:
			// Refused between the dry run and now (a policy changed), or the server did
			// not answer: the object stays, and says why.
			klog.ErrorS(err, "Initializers: deleting an object whose initialization failed", "resource", resource, "namespace", namespace, "name", name, "user", requester.GetName())
			p.recordDeletionError(resource, namespace, name, uid, requester, err)
		}
	})
	return status
}

// attemptKeyOf names the request's update of old; false without an audit ID.
func attemptKeyOf(ctx context.Context, a admission.Attributes, old metav1.Object) (attemptKey, bool) {
	id, ok := audit.AuditIDFrom(ctx)
	return attemptKey{request: id, object: old.GetUID(), user: a.GetUserInfo().GetName()}, ok && id != ""
}

// defaultDeleteRetries bound the deletion's tries when the server does not answer it (429,
// 5xx, a timeout, no connection): five, over about 15 s besides the tries themselves.
var defaultDeleteRetries = wait.Backoff{Duration: time.Second, Factor: 2, Steps: 5, Cap: 8 * time.Second}

// deleteFailed deletes the object, whatever was written to it since the result (a later
// write does not save it: the UID alone is the precondition). An answer that is not the
// server's decision is tried again within deleteRetries.
func (p *Plugin) deleteFailed(objects dynamic.ResourceInterface, name string, uid types.UID, propagation *metav1.DeletionPropagation) error {
	options := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: propagation}
	var err error
	backoff := p.deleteRetries
	for {
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		err = objects.Delete(ctx, name, options)
		cancel()
		if err == nil || !transient(err) || backoff.Steps <= 1 {
			return err
		}
		select {
		case <-time.After(backoff.Step()):
		case <-p.drained:
			return err
		}
	}
}

// transient reports an error that is not the server's decision on the request: tried again.
func transient(err error) bool {
	if _, decided := err.(apierrors.APIStatus); !decided {
		return true // no answer: the connection or the client's timeout
	}
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}

// deletionRefused is the answer to a failure result whose deletion the server refuses the
// requester: the result is refused, with the deletion's code.
func deletionRefused(requester user.Info, err error) error {
	statusErr, ok := err.(apierrors.APIStatus)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("%s: a failure result deletes the object, and judging that deletion as %s failed: %w", PluginName, requester.GetName(), err))
	}
	status := statusErr.Status()
	status.Message = fmt.Sprintf("a failure result deletes the object, and the deletion, tried first as a dry run as %s, is refused: %s", requester.GetName(), status.Message)
	return &apierrors.StatusError{ErrStatus: status}
}

// maxDeletionError bounds the message recorded on an object the server could not delete.
const maxDeletionError = 1024

// recordDeletionError records on an object why the deletion its failure result asked for
// did not happen, as the server (the requester's deletion was refused).
func (p *Plugin) recordDeletionError(resource schema.GroupVersionResource, namespace, name string, uid types.UID, requester user.Info, cause error) {
	message := fmt.Sprintf("deleting as %s, as the failure result asked: %v", requester.GetName(), cause)
	if len(message) > maxDeletionError {
		message = strings.ToValidUTF8(message[:maxDeletionError], "")
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		// The UID makes the patch fail rather than annotate an object created again.
		"uid":         uid,
		"annotations": map[string]string{DeletionErrorAnnotation: message},
	}})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		defer cancel()
		_, err = p.dynamicClient.Resource(resource).Namespace(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		klog.ErrorS(err, "Initializers: recording why an object whose initialization failed was not deleted", "resource", resource, "namespace", namespace, "name", name)
	}
}

// authorize asks the authorizer whether the user may do verb on the request's object;
// message leads the refusal.
func (p *Plugin) authorize(ctx context.Context, a admission.Attributes, verb, message string) error {
	resource := a.GetResource()
	decision, reason, err := p.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User:            a.GetUserInfo(),
		Verb:            verb,
		Namespace:       a.GetNamespace(),
		APIGroup:        resource.Group,
		APIVersion:      resource.Version,
		Resource:        resource.Resource,
		Name:            a.GetName(),
		ResourceRequest: true,
	})
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("%s: authorizing %s: %w", PluginName, verb, err))
	}
	if decision != authorizer.DecisionAllow {
		if reason == "" {
			reason = fmt.Sprintf("the user may not %s %s", verb, resource.GroupResource())
		}
		return apierrors.NewForbidden(resource.GroupResource(), a.GetName(), fmt.Errorf("%s: %s", message, reason))
	}
	return nil
}

// setPending records a pending list, or, when it is empty, that the object is initialized.
func setPending(obj metav1.Object, pending []string) {
	annotations, labels := obj.GetAnnotations(), obj.GetLabels()
	if len(pending) == 0 {
		if _, ok := annotations[PendingAnnotation]; ok {
			delete(annotations, PendingAnnotation)
			obj.SetAnnotations(annotations)
		}
		if _, ok := labels[UninitializedLabel]; ok {
			delete(labels, UninitializedLabel)
			obj.SetLabels(labels)
		}
		return
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[PendingAnnotation] = formatPending(pending)
	obj.SetAnnotations(annotations)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[UninitializedLabel] = strconv.FormatBool(true)
	obj.SetLabels(labels)
}

func isMirrorPod(obj any) bool {
	pod, ok := obj.(*api.Pod)
	if !ok {
		return false
	}
	_, mirror := pod.Annotations[api.MirrorPodAnnotationKey]
	return mirror
}

// notReady is 1.13's answer while the configurations load: a server timeout (500 with
// Retry-After), which clients retry.
func notReady(a admission.Attributes) error {
	err := apierrors.NewServerTimeout(a.GetResource().GroupResource(), "create", 1)
	err.ErrStatus.Message = "Waiting for the InitializerConfigurations to load"
	err.ErrStatus.Reason = "LoadingConfiguration"
	return err
}
