package initialresources

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	api "k8s.io/kubernetes/pkg/apis/core"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// verticalPodAutoscalers is the resource the VerticalPodAutoscaler source reads.
var verticalPodAutoscalers = schema.GroupVersionResource{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalers"}

// ownerResources are the owners a pod's controller chain passes through, and where to read
// each one's own controller: a Deployment's pods are owned by a ReplicaSet, a CronJob's by a
// Job. A VPA targets the top (or any) of the chain.
var ownerResources = map[schema.GroupKind]schema.GroupVersionResource{
	{Group: "apps", Kind: "ReplicaSet"}: {Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "batch", Kind: "Job"}:       {Group: "batch", Version: "v1", Resource: "jobs"},
	{Kind: "ReplicationController"}:     {Version: "v1", Resource: "replicationcontrollers"},
}

// objectRef names an object of the pod's namespace by group, kind and name.
type objectRef struct {
	namespace string
	group     string
	kind      string
	name      string
}

func (r objectRef) String() string {
	return fmt.Sprintf("%s.%s %s/%s", r.kind, r.group, r.namespace, r.name)
}

// autoscaler is what the source keeps of a VerticalPodAutoscaler.
type autoscaler struct {
	name   string
	target objectRef
	// requests are the recommendation's chosen field (target or uncappedTarget) per
	// container name.
	requests map[string]api.ResourceList
	// offContainers are the containers whose resource policy says mode: Off; defaultOff
	// is the policy of the others ("*").
	offContainers map[string]bool
	defaultOff    bool
}

// off reports whether the VPA's resource policy leaves container alone (mode: Off), as
// the VPA's own admission controller does.
func (a *autoscaler) off(container string) bool {
	if off, ok := a.offContainers[container]; ok {
		return off
	}
	return a.defaultOff
}

// autoscalersSize and ownerSize are what the caches count their entries as.
func autoscalersSize(namespace string, list []autoscaler) int {
	n := len(namespace)
	for _, a := range list {
		n += 64 + len(a.name) + len(a.target.group) + len(a.target.kind) + len(a.target.name)
		for c := range a.requests {
			n += 128 + len(c)
		}
		for c := range a.offContainers {
			n += 16 + len(c)
		}
	}
	return n
}

func ownerSize(ref objectRef, owner *objectRef) int {
	n := len(ref.namespace) + len(ref.group) + len(ref.kind) + len(ref.name)
	if owner != nil {
		n += 64 + len(owner.namespace) + len(owner.group) + len(owner.kind) + len(owner.name)
	}
	return n
}

// vpaSource finds the VerticalPodAutoscaler that targets a pod's owner and reads its
// recommendation. Both lookups are cached: the namespace's VPAs, and each owner's
// controller.
type vpaSource struct {
	client         dynamic.Interface
	recommendation portcullisapi.InitialResourcesRecommendation
	autoscalers    *cache[string, []autoscaler]
	owners         *cache[objectRef, *objectRef]
}

// listAutoscalers reads the namespace's VPAs; none when the CRD is not installed.
func (v *vpaSource) listAutoscalers(ctx context.Context, namespace string) ([]autoscaler, error) {
	list, err := v.client.Resource(verticalPodAutoscalers).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil // no VerticalPodAutoscaler CRD: the source has nothing, silently
	}
	if err != nil {
		return nil, fmt.Errorf("listing VerticalPodAutoscalers in %s: %w", namespace, err)
	}
	var out []autoscaler
	for _, item := range list.Items {
		if a, ok := v.parse(&item); ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// parse reads a VPA's target and recommendation; false when it has neither, or when its
// updateMode is Off: such a VPA only recommends, and the VPA's own admission controller
// leaves its pods alone.
func (v *vpaSource) parse(u *unstructured.Unstructured) (autoscaler, bool) {
	if mode, _, _ := unstructured.NestedString(u.Object, "spec", "updatePolicy", "updateMode"); mode == "Off" {
		return autoscaler{}, false
	}
	apiVersion, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "apiVersion")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "kind")
	name, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "name")
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" || name == "" {
		return autoscaler{}, false
	}
	a := autoscaler{name: u.GetName(), target: objectRef{u.GetNamespace(), gv.Group, kind, name}, requests: map[string]api.ResourceList{}}
	recs, _, _ := unstructured.NestedSlice(u.Object, "status", "recommendation", "containerRecommendations")
	for _, r := range recs {
		rec, ok := r.(map[string]any)
		if !ok {
			continue
		}
		container, _, _ := unstructured.NestedString(rec, "containerName")
		values, _, _ := unstructured.NestedStringMap(rec, string(v.recommendation))
		list := api.ResourceList{}
		for _, res := range estimatedResources {
			if q, err := resource.ParseQuantity(values[string(res)]); err == nil && q.Sign() > 0 {
				list[res] = q
			}
		}
		if container != "" && len(list) > 0 {
			a.requests[container] = list
		}
	}
	policies, _, _ := unstructured.NestedSlice(u.Object, "spec", "resourcePolicy", "containerPolicies")
	for _, p := range policies {
		policy, ok := p.(map[string]any)
		if !ok {
			continue
		}
		container, _, _ := unstructured.NestedString(policy, "containerName")
		mode, _, _ := unstructured.NestedString(policy, "mode")
		if container == "*" {
			a.defaultOff = mode == "Off"
			continue
		}
		if a.offContainers == nil {
			a.offContainers = map[string]bool{}
		}
		a.offContainers[container] = mode == "Off"
	}
	return a, len(a.requests) > 0
}

// ownerOf reads ref's controller, or nil: a ReplicaSet's Deployment, a Job's CronJob.
func (v *vpaSource) ownerOf(ctx context.Context, ref objectRef) (*objectRef, error) {
	gvr, ok := ownerResources[schema.GroupKind{Group: ref.group, Kind: ref.kind}]
	if !ok {
		return nil, nil
	}
	obj, err := v.client.Resource(gvr).Namespace(ref.namespace).Get(ctx, ref.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	return controllerRef(ref.namespace, obj.GetOwnerReferences()), nil
}

// controllerRef is the controller among owner references, or nil.
func controllerRef(namespace string, refs []metav1.OwnerReference) *objectRef {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			gv, err := schema.ParseGroupVersion(r.APIVersion)
			if err != nil {
				return nil
			}
			return &objectRef{namespace, gv.Group, r.Kind, r.Name}
		}
	}
	return nil
}

// maxOwnerDepth bounds the walk up a pod's controllers (pod → ReplicaSet → Deployment is 2).
const maxOwnerDepth = 4

// lookup returns the VPA targeting the pod's controller chain, if any, and how its lookups
// ended (found when they finished before deadline, whatever they found).
func (v *vpaSource) lookup(ctx context.Context, deadline time.Time, pod *api.Pod) (*autoscaler, lookup) {
	ref := controllerRef(pod.Namespace, pod.OwnerReferences)
	if ref == nil {
		return nil, found // a pod of no controller: no VPA targets it
	}
	all, state := v.autoscalers.get(ctx, pod.Namespace, pod.Namespace, deadline, nil)
	if state != found || len(all) == 0 {
		return nil, state
	}
	for depth := 0; ref != nil && depth < maxOwnerDepth; depth++ {
		for i := range all {
			if all[i].target == *ref {
				return &all[i], found
			}
		}
		if ref, state = v.owners.get(ctx, *ref, ref.namespace, deadline, nil); state != found {
			return nil, state
		}
	}
	return nil, found
}
