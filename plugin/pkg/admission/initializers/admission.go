// Package initializers is the Initializers admission plugin, removed upstream in 1.14: a new
// object that an InitializerConfiguration's rules match is recorded as pending its
// initializers, in order, until each has removed itself; a pod is also held by a scheduling
// gate per initializer, so that it does not run before they are done.
package initializers

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
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

	// configurations are the InitializerConfigurations sorted by name, replaced whole on
	// every change, so that a request reads them without a lock or a copy.
	configurations atomic.Pointer[[]*admissionregistrationv1alpha1.InitializerConfiguration]
	ready          func() bool
	readyTimeout   time.Duration
	// deletions are the deletions of failed objects under way, for tests.
	deletions sync.WaitGroup
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
		Handler:      admission.NewHandler(admission.Create, admission.Update),
		ready:        func() bool { return false },
		readyTimeout: readiness.DefaultTimeout,
	}
}

// SetAuthorizer receives the server's authorizer, which decides the initialize verb.
func (p *Plugin) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

// SetDynamicClient receives the loopback dynamic client, used to watch the
// InitializerConfigurations and to delete an object whose initialization failed.
func (p *Plugin) SetDynamicClient(client dynamic.Interface) { p.dynamicClient = client }

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
	informer := newConfigurationInformer(p.dynamicClient)
	store := informer.GetStore()
	load := func() {
		var configs []*admissionregistrationv1alpha1.InitializerConfiguration
		for _, obj := range store.List() {
			if config, ok := obj.(*admissionregistrationv1alpha1.InitializerConfiguration); ok {
				configs = append(configs, config)
			}
		}
		p.setConfigurations(configs)
	}
	registration, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { load() },
		UpdateFunc: func(any, any) { load() },
		DeleteFunc: func(any) { load() },
	})
	if err != nil {
		return fmt.Errorf("%s: watching the InitializerConfigurations: %w", PluginName, err)
	}
	// Ready once the handler has loaded every configuration listed first.
	p.ready = registration.HasSynced
	go informer.RunWithContext(readiness.UntilDrained(p.drained))
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
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	accessor, err := meta.Accessor(a.GetObject())
	if err != nil {
		// Objects without metadata cannot be initialized (1.13: fail open).
		return nil
	}
	switch a.GetOperation() {
	case admission.Create:
		return p.admitCreate(ctx, a, accessor)
	case admission.Update:
		old, err := meta.Accessor(a.GetOldObject())
		if err != nil {
			return nil
		}
		return p.admitUpdate(ctx, a, accessor, old)
	}
	return nil
}

func (p *Plugin) admitCreate(ctx context.Context, a admission.Attributes, obj metav1.Object) error {
	if _, failed := obj.GetAnnotations()[ResultAnnotation]; failed {
		return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), field.ErrorList{
			field.Forbidden(field.NewPath("metadata", "annotations").Key(ResultAnnotation), "an initialization result is set by an initializer, on update"),
		})
	}
	var pending []string
	if value, given := obj.GetAnnotations()[PendingAnnotation]; given {
		// The creator names the initializers, or none (a bypass): either needs initialize.
		if err := p.canInitialize(ctx, a, "create with initializers denied"); err != nil {
			return err
		}
		var errs field.ErrorList
		if pending, errs = parsePending(value); len(errs) > 0 {
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
			pending = initializersFor(*configs, a.GetResource())
		}
	}
	setPending(obj, pending)
	if pod, ok := a.GetObject().(*api.Pod); ok && pod.Spec.NodeName == "" {
		// Gates are forbidden on a pod bound at creation: it is recorded, not held.
		for _, name := range pending {
			if !slices.ContainsFunc(pod.Spec.SchedulingGates, func(g api.PodSchedulingGate) bool { return g.Name == name }) {
				pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, api.PodSchedulingGate{Name: name})
			}
		}
	}
	if len(pending) > 0 {
		klog.V(4).InfoS("Initializers: pending", "resource", a.GetResource(), "namespace", a.GetNamespace(), "name", a.GetName(), "initializers", pending)
	}
	return nil
}

func (p *Plugin) admitUpdate(ctx context.Context, a admission.Attributes, obj, old metav1.Object) error {
	current, _ := parsePending(old.GetAnnotations()[PendingAnnotation])
	value := obj.GetAnnotations()[PendingAnnotation]
	updated, errs := parsePending(value)
	oldResult, newResult := old.GetAnnotations()[ResultAnnotation], obj.GetAnnotations()[ResultAnnotation]
	changed := !slices.Equal(current, updated) || oldResult != newResult
	if changed {
		if len(errs) > 0 {
			return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), errs)
		}
		if !isRemoval(current, updated) {
			return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), field.ErrorList{
				field.Invalid(pendingPath, value, fmt.Sprintf("an update may only remove pending initializers (pending: %q)", formatPending(current))),
			})
		}
		if err := p.canInitialize(ctx, a, "update to the initialization of a resource denied"); err != nil {
			return err
		}
	}
	if newResult != "" && newResult != oldResult {
		return p.fail(ctx, a, old, newResult)
	}
	if pod, ok := a.GetObject().(*api.Pod); ok {
		oldPod, _ := a.GetOldObject().(*api.Pod)
		if err := ungate(a, pod, oldPod, current, updated); err != nil {
			return err
		}
	}
	// The label follows the list; neither outlives it.
	setPending(obj, updated)
	return nil
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
func (p *Plugin) fail(ctx context.Context, a admission.Attributes, old metav1.Object, result string) error {
	status := failureStatus(result)
	if a.IsDryRun() {
		return status
	}
	resource, namespace, name, uid := a.GetResource(), a.GetNamespace(), a.GetName(), old.GetUID()
	p.deletions.Go(func() {
		select {
		case <-ctx.Done():
		case <-p.drained:
			return
		}
		deleteCtx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		defer cancel()
		err := p.dynamicClient.Resource(resource).Namespace(namespace).Delete(deleteCtx, name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case err == nil:
			klog.InfoS("Initializers: initialization failed; object deleted", "resource", resource, "namespace", namespace, "name", name, "result", status.ErrStatus.Message)
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			// A conflict: the UID differs, the object was deleted and created again.
			klog.ErrorS(err, "Initializers: deleting an object whose initialization failed", "resource", resource, "namespace", namespace, "name", name)
		}
	})
	return status
}

// canInitialize asks the authorizer whether the user may initialize the resource.
func (p *Plugin) canInitialize(ctx context.Context, a admission.Attributes, message string) error {
	resource := a.GetResource()
	decision, reason, err := p.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User:            a.GetUserInfo(),
		Verb:            InitializeVerb,
		Namespace:       a.GetNamespace(),
		APIGroup:        resource.Group,
		APIVersion:      resource.Version,
		Resource:        resource.Resource,
		Name:            a.GetName(),
		ResourceRequest: true,
	})
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("%s: authorizing %s: %w", PluginName, InitializeVerb, err))
	}
	if decision != authorizer.DecisionAllow {
		if reason == "" {
			reason = fmt.Sprintf("the user may not %s %s", InitializeVerb, resource.GroupResource())
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
