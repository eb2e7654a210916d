// Package podpreset restores the PodPreset admission controller and its
// settings.k8s.io/v1alpha1 API, which upstream served as alpha from 1.6 and removed in 1.20.
//
// A PodPreset injects environment variables, volumes and volume mounts into the pods its
// selector matches when they are created. The API is served from a CustomResourceDefinition
// that the plugin installs when it is enabled; the plugin validates presets when they are
// written, reads them from an informer and merges every matching preset into the pod, or
// none of them when any conflicts.
package podpreset

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"

	settingsv1alpha1 "github.com/portcullis-k8s/api/settings/v1alpha1"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/internal/readiness"
)

const (
	// PluginName is the name of this admission controller.
	PluginName = "PodPreset"

	annotationPrefix = "podpreset.admission.kubernetes.io"
	// ExcludeAnnotation set to "true" on a pod keeps every preset off it.
	ExcludeAnnotation = annotationPrefix + "/exclude"
	// AppliedAnnotationPrefix + preset name records, on the pod, the resourceVersion of each
	// preset applied.
	AppliedAnnotationPrefix = annotationPrefix + "/podpreset-"

	// ConflictReason is the reason of the Warning event recorded on a conflict.
	ConflictReason = "PodPresetConflict"

	// ReadinessCheckName names the plugin's check in the server's /readyz: the CRD is
	// established and every preset has been read.
	ReadinessCheckName = "podpreset-presets-synced"
)

// Register registers the plugin. It takes no configuration.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(), nil
	})
}

// Plugin merges matching PodPresets into new pods.
type Plugin struct {
	*admission.Handler
	client        kubernetes.Interface
	dynamicClient dynamic.Interface
	drained       <-chan struct{}

	presets  cache.Indexer
	recorder record.EventRecorder
	// ready reports whether the CRD is established and the presets have been listed.
	ready        func() bool
	readyTimeout time.Duration
}

var (
	_ admission.MutationInterface                     = &Plugin{}
	_ admission.ValidationInterface                   = &Plugin{}
	_ genericadmissioninit.WantsExternalKubeClientSet = &Plugin{}
	_ genericadmissioninit.WantsDynamicClient         = &Plugin{}
	_ genericadmissioninit.WantsDrainedNotification   = &Plugin{}
)

// New returns a PodPreset plugin handling CREATE (pods and presets) and UPDATE (presets).
func New() *Plugin {
	return &Plugin{
		Handler:      admission.NewHandler(admission.Create, admission.Update),
		ready:        func() bool { return false },
		readyTimeout: readiness.DefaultTimeout,
	}
}

// SetExternalKubeClientSet receives the loopback client, used to record events.
func (p *Plugin) SetExternalKubeClientSet(client kubernetes.Interface) { p.client = client }

// SetDynamicClient receives the loopback dynamic client, used to install the CRD and to
// watch presets.
func (p *Plugin) SetDynamicClient(client dynamic.Interface) { p.dynamicClient = client }

// SetDrainedNotification receives the channel closed when the server has drained: the
// plugin's background work stops then.
func (p *Plugin) SetDrainedNotification(drained <-chan struct{}) { p.drained = drained }

// ValidateInitialization checks the plugin got what it needs, then starts its background
// work: installing the CRD, watching presets, recording events. The plugin is ready once
// the presets have been listed.
func (p *Plugin) ValidateInitialization() error {
	switch {
	case p.client == nil:
		return fmt.Errorf("%s: missing client", PluginName)
	case p.dynamicClient == nil:
		return fmt.Errorf("%s: missing dynamic client", PluginName)
	case p.drained == nil:
		return fmt.Errorf("%s: missing drained notification", PluginName)
	}
	ctx := readiness.UntilDrained(p.drained)

	// The informer starts once the CRD is established, so it lists at once rather than
	// backing off from "not found"; the installer then keeps the CRD in place.
	informer := newPresetInformer(p.dynamicClient)
	p.presets = informer.GetIndexer()
	p.ready = informer.HasSynced
	installer := &crdInstaller{client: p.dynamicClient, logger: klog.Background()}
	go installer.run(ctx, func() { go informer.RunWithContext(ctx) })

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: p.client.CoreV1().Events("")})
	p.recorder = broadcaster.NewRecorder(nil, corev1.EventSource{Component: "kube-apiserver", Host: "podpreset-admission"})
	go func() {
		<-ctx.Done()
		broadcaster.Shutdown()
	}()
	return nil
}

// ReadinessCheck returns the check the server adds to /readyz, so that once /readyz says ok
// the PodPreset API is served and pods get their presets rather than a not-ready refusal.
func (p *Plugin) ReadinessCheck() healthz.HealthChecker {
	return readiness.Check(ReadinessCheckName, "the PodPreset CRD is not established or the presets are not listed yet", p.ready)
}

// waitForReady waits, at most readyTimeout and never past the request's deadline, for the
// presets to be listed.
func (p *Plugin) waitForReady(ctx context.Context) bool {
	return readiness.Wait(ctx, p.ready, p.readyTimeout)
}

var (
	podsResource      = api.Resource("pods")
	podPresetResource = settingsv1alpha1.Resource.GroupResource()
	podPresetKind     = settingsv1alpha1.SchemeGroupVersion.WithKind("PodPreset").GroupKind()
)

// admittedWithoutPresets is the reinvocation context's record of a conflict.
const admittedWithoutPresets = "admitted without presets"

// Admit merges the pod's matching presets into it, or, when any conflicts, none of them:
// the pod is then admitted unchanged with a warning to the client and an event.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != podsResource || a.GetSubresource() != "" || a.GetOperation() != admission.Create {
		return nil
	}
	pod, ok := a.GetObject().(*api.Pod)
	if !ok {
		return apierrors.NewBadRequest("PodPreset: the object of a pods request is not a Pod")
	}
	if _, mirror := pod.Annotations[api.MirrorPodAnnotationKey]; mirror {
		return nil
	}
	if pod.Annotations[ExcludeAnnotation] == "true" {
		return nil
	}
	if !p.waitForReady(ctx) {
		return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
	}

	// The server runs the plugin again when a webhook changed the pod (reinvocation): a pod
	// the first run admitted without its presets stays so, reported once.
	reinvocation := a.GetReinvocationContext()
	if reinvocation.Value(PluginName) == admittedWithoutPresets {
		return nil
	}
	matching := p.matching(a.GetNamespace(), pod.Labels)
	if len(matching) == 0 {
		return nil
	}
	merge := mergePresets(pod, matching)
	if len(merge.conflicts) > 0 {
		reinvocation.SetValue(PluginName, admittedWithoutPresets)
		p.reportConflicts(ctx, pod, matching, merge.conflicts, a.IsDryRun())
		return nil
	}
	merge.applyTo(pod, matching)
	return nil
}

// Validate refuses a PodPreset that the 1.19 API server would have refused, or that would
// fail the pods it matches, with every reason at once.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != podPresetResource || a.GetSubresource() != "" {
		return nil
	}
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok {
		return apierrors.NewBadRequest("PodPreset: the object of a podpresets request is not a PodPreset")
	}
	var pp settingsv1alpha1.PodPreset
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pp); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("PodPreset: %v", err))
	}
	if errs := Validate(&pp); len(errs) > 0 {
		return apierrors.NewInvalid(podPresetKind, pp.Name, errs)
	}
	return nil
}

// matching returns the namespace's presets whose selector matches podLabels, by name. The
// label index narrows them to the presets indexed under one of the pod's labels, and those
// whose selector names no value.
func (p *Plugin) matching(namespace string, podLabels map[string]string) []*preset {
	var out []*preset
	collect := func(key string) {
		objs, _ := p.presets.ByIndex(labelIndex, key)
		for _, obj := range objs {
			if pp, ok := obj.(*preset); ok && pp.selector.Matches(labels.Set(podLabels)) {
				out = append(out, pp)
			}
		}
	}
	collect(namespace + "/")
	for k, v := range podLabels {
		collect(labelKey(namespace, k, v))
	}
	slices.SortFunc(out, func(a, b *preset) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (p *Plugin) reportConflicts(ctx context.Context, pod *api.Pod, presets []*preset, conflicts []string, dryRun bool) {
	names := make([]string, len(presets))
	for i, pp := range presets {
		names[i] = pp.Name
	}
	podName := pod.Name
	if podName == "" {
		podName = pod.GenerateName + "*"
	}
	message := fmt.Sprintf("pod %s was admitted without podpresets %s: %s",
		podName, strings.Join(names, ", "), strings.Join(conflicts, "; "))
	warning.AddWarning(ctx, "", "PodPreset conflict: "+message)
	if dryRun {
		// A dry run changes nothing, events included; the client still gets the warning.
		return
	}
	for _, pp := range presets {
		p.recorder.Event(pp.reference(), corev1.EventTypeWarning, ConflictReason, message)
	}
}
