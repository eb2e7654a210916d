// Package podpreset restores the PodPreset admission controller and its
// settings.k8s.io/v1alpha1 API, which upstream served as alpha from 1.6 and removed in 1.20.
//
// A PodPreset injects environment variables, volumes and volume mounts into the pods its
// selector matches when they are created. The API is served from a CustomResourceDefinition
// that the plugin installs when it is enabled; the plugin reads presets from an informer and
// merges every matching preset into the pod, or none of them when any conflicts.
package podpreset

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	api "k8s.io/kubernetes/pkg/apis/core"
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
}

var (
	_ admission.MutationInterface                     = &Plugin{}
	_ genericadmissioninit.WantsExternalKubeClientSet = &Plugin{}
	_ genericadmissioninit.WantsDynamicClient         = &Plugin{}
	_ genericadmissioninit.WantsDrainedNotification   = &Plugin{}
)

// New returns a PodPreset plugin handling CREATE.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create)}
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
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-p.drained
		cancel()
	}()

	go installCRD(ctx, p.dynamicClient)

	informer := newPresetInformer(p.dynamicClient)
	p.presets = informer.GetIndexer()
	go informer.RunWithContext(ctx)
	p.SetReadyFunc(informer.HasSynced)

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: p.client.CoreV1().Events("")})
	p.recorder = broadcaster.NewRecorder(nil, corev1.EventSource{Component: "kube-apiserver", Host: "podpreset-admission"})
	go func() {
		<-ctx.Done()
		broadcaster.Shutdown()
	}()
	return nil
}

var podsResource = api.Resource("pods")

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
	if !p.WaitForReady() {
		return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
	}

	matching := p.matching(a.GetNamespace(), pod.Labels)
	if len(matching) == 0 {
		return nil
	}
	if conflicts := findConflicts(pod, matching); len(conflicts) > 0 {
		p.reportConflicts(ctx, pod, matching, conflicts)
		return nil
	}
	apply(pod, matching)
	return nil
}

// matching returns the namespace's presets whose selector matches podLabels, by name.
func (p *Plugin) matching(namespace string, podLabels map[string]string) []*preset {
	objs, err := p.presets.ByIndex(cache.NamespaceIndex, namespace)
	if err != nil || len(objs) == 0 {
		return nil
	}
	set := labels.Set(podLabels)
	var out []*preset
	for _, obj := range objs {
		pp, ok := obj.(*preset)
		if ok && pp.selector.Matches(set) {
			out = append(out, pp)
		}
	}
	slices.SortFunc(out, func(a, b *preset) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (p *Plugin) reportConflicts(ctx context.Context, pod *api.Pod, presets []*preset, conflicts []string) {
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
	for _, pp := range presets {
		p.recorder.Event(pp.reference(), corev1.EventTypeWarning, ConflictReason, message)
	}
}
