package initializers

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/audit"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	admissiontesting "k8s.io/apiserver/pkg/admission/testing"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/apis/apps"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
)

var (
	podsResource        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploymentsResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	secretsResource     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

	initializerUser = &user.DefaultInfo{Name: "initializer"}
	// initializeOnly may initialize but not delete, as an initializer's role without delete.
	initializeOnly = &user.DefaultInfo{Name: "initialize-only"}
	ordinaryUser   = &user.DefaultInfo{Name: "developer"}

	// verbsOf are the verbs the tests' authorizer allows each user, on anything.
	verbsOf = map[string][]string{
		initializerUser.Name: {InitializeVerb, "delete"},
		initializeOnly.Name:  {InitializeVerb},
	}
)

func configuration(name string, initializers ...admissionregistrationv1alpha1.Initializer) *admissionregistrationv1alpha1.InitializerConfiguration {
	return &admissionregistrationv1alpha1.InitializerConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Initializers: initializers}
}

func initializer(name string, rules ...admissionregistrationv1alpha1.Rule) admissionregistrationv1alpha1.Initializer {
	return admissionregistrationv1alpha1.Initializer{Name: name, Rules: rules}
}

func rule(group, version, resource string) admissionregistrationv1alpha1.Rule {
	return admissionregistrationv1alpha1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}}
}

// The configurations of the tests: "b-config" is named after "a-config", so its
// initializer comes second for pods; deployments have their own.
func configurations() []*admissionregistrationv1alpha1.InitializerConfiguration {
	return []*admissionregistrationv1alpha1.InitializerConfiguration{
		configuration("b-config", initializer("sidecar.example.com", rule("", "v1", "pods"))),
		configuration("a-config",
			initializer("podimage.example.com", rule("", "v1", "pods")),
			initializer("policy.example.com", rule("apps", "*", "deployments"), rule("", "v1", "pods"))),
	}
}

// newPlugin returns a ready plugin with configs, whose authorizer allows each user the
// verbsOf it, and the clients it calls the server with.
func newPlugin(t testing.TB, configs ...*admissionregistrationv1alpha1.InitializerConfiguration) (*Plugin, *clients) {
	t.Helper()
	c := &clients{server: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}
	p := New()
	p.SetAuthorizer(authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if slices.Contains(verbsOf[a.GetUser().GetName()], a.GetVerb()) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "no rule allows it", nil
	}))
	p.SetDynamicClient(c.server)
	p.clientAs = c.as
	p.setConfigurations(configs)
	p.ready = func() bool { return true }
	return p, c
}

// clients stand in for the server the plugin calls: as itself (server), and as a requester
// (as), whose deletions the tests' server judges by verbsOf, then by refuse.
type clients struct {
	server *dynamicfake.FakeDynamicClient
	// refuse is the server's answer to a deletion the requester may make: nil admits it.
	refuse func(dryRun bool) error

	mu        sync.Mutex
	deletions []deletion
}

// deletion is a delete the plugin made as a user.
type deletion struct {
	user   string
	dryRun bool
	action clienttesting.DeleteAction
}

func (c *clients) as(u user.Info) (dynamic.Interface, error) {
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	client.PrependReactor("delete", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		del := action.(clienttesting.DeleteAction)
		dryRun := slices.Contains(del.GetDeleteOptions().DryRun, metav1.DryRunAll)
		c.mu.Lock()
		c.deletions = append(c.deletions, deletion{user: u.GetName(), dryRun: dryRun, action: del})
		c.mu.Unlock()
		if !slices.Contains(verbsOf[u.GetName()], "delete") {
			return true, nil, apierrors.NewForbidden(del.GetResource().GroupResource(), del.GetName(), fmt.Errorf("User %q cannot delete", u.GetName()))
		}
		if c.refuse != nil {
			return true, nil, c.refuse(dryRun)
		}
		return true, nil, nil
	})
	return client, nil
}

// made returns the deletions made so far, those for real (not dry runs) when real.
func (c *clients) made(real bool) []deletion {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []deletion
	for _, d := range c.deletions {
		if !real || !d.dryRun {
			out = append(out, d)
		}
	}
	return out
}

func pod(mutate func(*api.Pod)) *api.Pod {
	p := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       api.PodSpec{Containers: []api.Container{{Name: "c", Image: "nginx"}}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func pendingPod(pending string, gates ...string) *api.Pod {
	return pod(func(p *api.Pod) {
		p.Annotations = map[string]string{PendingAnnotation: pending}
		p.Labels = map[string]string{UninitializedLabel: "true"}
		for _, g := range gates {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, api.PodSchedulingGate{Name: g})
		}
	})
}

// tooLong is an initializer name whose first segment is over the 63 characters the rules
// allow: a list written while the plugin was off may hold it.
var tooLong = strings.Repeat("a", 64) + ".example.com"

func withResourceVersion(p *api.Pod, rv string) *api.Pod {
	p.ResourceVersion = rv
	return p
}

func gates(p *api.Pod) []string {
	var out []string
	for _, g := range p.Spec.SchedulingGates {
		out = append(out, g.Name)
	}
	return out
}

func createAttributes(obj runtime.Object, resource schema.GroupVersionResource, kind string, u user.Info) admission.Attributes {
	m, _ := obj.(metav1.Object)
	return admission.NewAttributesRecord(obj, nil, resource.GroupVersion().WithKind(kind), m.GetNamespace(), m.GetName(), resource, "", admission.Create, &metav1.CreateOptions{}, false, u)
}

func updateAttributes(obj, old runtime.Object, u user.Info, dryRun bool) admission.Attributes {
	m, _ := obj.(metav1.Object)
	return admission.NewAttributesRecord(obj, old, podsResource.GroupVersion().WithKind("Pod"), m.GetNamespace(), m.GetName(), podsResource, "", admission.Update, &metav1.UpdateOptions{}, dryRun, u)
}

// checkAdmitted fails unless err is as wanted: nil, or an error wantErr accepts that
// contains wantText. It reports whether the request was admitted.
func checkAdmitted(t *testing.T, err error, wantErr func(error) bool, wantText string) bool {
	t.Helper()
	if wantErr == nil {
		if err != nil {
			t.Fatal(err)
		}
		return true
	}
	if !wantErr(err) || !strings.Contains(err.Error(), wantText) {
		t.Fatalf("got %v, want an error containing %q", err, wantText)
	}
	return false
}

// checkPending fails unless obj's pending annotation is want and the label is there exactly
// with it.
func checkPending(t *testing.T, obj metav1.Object, want string) {
	t.Helper()
	pending, annotated := obj.GetAnnotations()[PendingAnnotation]
	label, labelled := obj.GetLabels()[UninitializedLabel]
	switch {
	case want == "" && (annotated || labelled):
		t.Errorf("annotation %q, label %q: want neither", pending, label)
	case want != "" && (pending != want || label != "true"):
		t.Errorf("annotation %q, label %q: want %q and true", pending, label, want)
	}
}

func TestAdmitCreate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		obj      runtime.Object
		resource schema.GroupVersionResource
		kind     string
		user     user.Info
		// wantPending is the annotation written ("" for none); wantGates the pod's gates.
		wantPending string
		wantGates   []string
		wantErr     func(error) bool
		wantErrText string
	}{
		{
			name: "a pod: the configurations' initializers by configuration name, in order; a gate each",
			obj:  pod(nil), resource: podsResource, kind: "Pod", user: ordinaryUser,
			wantPending: "podimage.example.com,policy.example.com,sidecar.example.com",
			wantGates:   []string{"podimage.example.com", "policy.example.com", "sidecar.example.com"},
		},
		{
			name: "a pod bound at creation is recorded, not gated (gates are forbidden there)",
			obj:  pod(func(p *api.Pod) { p.Spec.NodeName = "node-a" }), resource: podsResource, kind: "Pod", user: ordinaryUser,
			wantPending: "podimage.example.com,policy.example.com,sidecar.example.com",
		},
		{
			name: "a mirror pod is exempt",
			obj:  pod(func(p *api.Pod) { p.Annotations = map[string]string{api.MirrorPodAnnotationKey: "x"} }), resource: podsResource, kind: "Pod", user: ordinaryUser,
		},
		{
			name: "a gate the pod already has is not repeated",
			obj:  pod(func(p *api.Pod) { p.Spec.SchedulingGates = []api.PodSchedulingGate{{Name: "sidecar.example.com"}} }), resource: podsResource, kind: "Pod", user: ordinaryUser,
			wantPending: "podimage.example.com,policy.example.com,sidecar.example.com",
			wantGates:   []string{"sidecar.example.com", "podimage.example.com", "policy.example.com"},
		},
		{
			name: "a deployment: annotated and labelled, by the rule with a version wildcard",
			obj:  &apps.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}}, resource: deploymentsResource, kind: "Deployment", user: ordinaryUser,
			wantPending: "policy.example.com",
		},
		{
			name: "a resource no rule matches is left alone",
			obj:  &api.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}}, resource: secretsResource, kind: "Secret", user: ordinaryUser,
		},
		{
			name: "the creator names the initializers: allowed with initialize",
			obj:  pod(func(p *api.Pod) { p.Annotations = map[string]string{PendingAnnotation: "own.example.com"} }), resource: podsResource, kind: "Pod", user: initializerUser,
			wantPending: "own.example.com", wantGates: []string{"own.example.com"},
		},
		{
			name: "the creator names the initializers: refused without initialize",
			obj:  pod(func(p *api.Pod) { p.Annotations = map[string]string{PendingAnnotation: "own.example.com"} }), resource: podsResource, kind: "Pod", user: ordinaryUser,
			wantErr: apierrors.IsForbidden, wantErrText: "create with initializers denied",
		},
		{
			name: "an empty list bypasses initialization: allowed with initialize",
			obj:  pod(func(p *api.Pod) { p.Annotations = map[string]string{PendingAnnotation: ""} }), resource: podsResource, kind: "Pod", user: initializerUser,
		},
		{
			name: "an empty list bypasses initialization: refused without initialize",
			obj:  pod(func(p *api.Pod) { p.Annotations = map[string]string{PendingAnnotation: ""} }), resource: podsResource, kind: "Pod", user: ordinaryUser,
			wantErr: apierrors.IsForbidden, wantErrText: "create with initializers denied",
		},
		{
			name: "a name that is not fully qualified is refused, naming the annotation",
			obj:  pod(func(p *api.Pod) { p.Annotations = map[string]string{PendingAnnotation: "a.example.com,example.com"} }), resource: podsResource, kind: "Pod", user: initializerUser,
			wantErr: apierrors.IsInvalid, wantErrText: "metadata.annotations[initializer.admission.portcullis.io/pending][1]",
		},
		{
			name: "a ReplicaSet its controller copied a pending Deployment's list to: refused, saying the owner is pending",
			obj: &apps.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default",
				Annotations:     map[string]string{PendingAnnotation: "policy.example.com"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d", Controller: ptr.To(true)}}}},
			resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, kind: "ReplicaSet", user: ordinaryUser,
			wantErr: apierrors.IsForbidden, wantErrText: "creates it once its owner Deployment web is initialized",
		},
		{
			name: "a name too long for a scheduling gate is refused, saying why",
			obj: pod(func(p *api.Pod) {
				p.Annotations = map[string]string{PendingAnnotation: strings.Repeat("a", 60) + ".example.com"}
			}), resource: podsResource, kind: "Pod", user: initializerUser,
			wantErr: apierrors.IsInvalid, wantErrText: "the name of the scheduling gate",
		},
		{
			name: "a name twice is refused",
			obj:  pod(func(p *api.Pod) { p.Annotations = map[string]string{PendingAnnotation: "a.example.com,a.example.com"} }), resource: podsResource, kind: "Pod", user: initializerUser,
			wantErr: apierrors.IsInvalid, wantErrText: "Duplicate value",
		},
		{
			name: "a result on create is refused",
			obj:  pod(func(p *api.Pod) { p.Annotations = map[string]string{ResultAnnotation: "failed"} }), resource: podsResource, kind: "Pod", user: initializerUser,
			wantErr: apierrors.IsInvalid, wantErrText: ResultAnnotation,
		},
		{
			name: "the uninitialized label without a pending list is the plugin's to set: removed",
			obj:  &api.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", Labels: map[string]string{UninitializedLabel: "true"}}}, resource: secretsResource, kind: "Secret", user: ordinaryUser,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPlugin(t, configurations()...)
			// Upstream's tester runs the plugin twice on the same request, as the server
			// does when a webhook changed the object.
			err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), createAttributes(tc.obj, tc.resource, tc.kind, tc.user), nil)
			if !checkAdmitted(t, err, tc.wantErr, tc.wantErrText) {
				return
			}
			checkPending(t, tc.obj.(metav1.Object), tc.wantPending)
			if p, ok := tc.obj.(*api.Pod); ok {
				if diff := cmp.Diff(tc.wantGates, gates(p)); diff != "" {
					t.Errorf("gates (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestAdmitCreateWaitsForTheConfigurations(t *testing.T) {
	p, _ := newPlugin(t)
	p.ready = func() bool { return false }
	p.readyTimeout = 10 * time.Millisecond
	err := p.Admit(context.Background(), createAttributes(pod(nil), podsResource, "Pod", ordinaryUser), nil)
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Code != http.StatusInternalServerError || status.Status().Reason != "LoadingConfiguration" ||
		status.Status().Details == nil || status.Status().Details.RetryAfterSeconds != 1 {
		t.Fatalf("got %v, want 500 LoadingConfiguration the client retries after a second", err)
	}
}

func TestAdmitUpdate(t *testing.T) {
	const all = "a.example.com,b.example.com,c.example.com"
	allGates := []string{"a.example.com", "b.example.com", "c.example.com"}
	for _, tc := range []struct {
		name        string
		old, new    *api.Pod
		user        user.Info
		subresource string
		wantPending string
		wantGates   []string
		wantErr     func(error) bool
		wantErrText string
	}{
		{
			name: "the head removes itself: its gate goes",
			old:  pendingPod(all, allGates...), new: pendingPod("b.example.com,c.example.com", allGates...), user: initializerUser,
			wantPending: "b.example.com,c.example.com", wantGates: []string{"b.example.com", "c.example.com"},
		},
		{
			name: "any entry may be removed, not only the head",
			old:  pendingPod(all, allGates...), new: pendingPod("a.example.com,c.example.com", allGates...), user: initializerUser,
			wantPending: "a.example.com,c.example.com", wantGates: []string{"a.example.com", "c.example.com"},
		},
		{
			name: "the last one removes itself: the annotation, the label and the gates go",
			old:  pendingPod("c.example.com", "c.example.com"), new: pendingPod("", "c.example.com"), user: initializerUser,
		},
		{
			name: "removing the annotation removes every entry",
			old:  pendingPod(all, allGates...), new: pod(func(p *api.Pod) { p.Spec.SchedulingGates = pendingPod(all, allGates...).Spec.SchedulingGates }), user: initializerUser,
		},
		{
			name: "without initialize, the list unchanged: allowed, the label kept",
			old:  pendingPod(all, allGates...), new: pod(func(p *api.Pod) { *p = *pendingPod(all, allGates...); p.Labels = nil }), user: ordinaryUser,
			wantPending: all, wantGates: allGates,
		},
		{
			name: "without initialize, a removal is refused",
			old:  pendingPod(all, allGates...), new: pendingPod("b.example.com,c.example.com", allGates...), user: ordinaryUser,
			wantErr: apierrors.IsForbidden, wantErrText: "update to the initialization of a resource denied",
		},
		{
			name: "adding an initializer is refused",
			old:  pendingPod("a.example.com", "a.example.com"), new: pendingPod("a.example.com,z.example.com", "a.example.com"), user: initializerUser,
			wantErr: apierrors.IsInvalid, wantErrText: "may only remove pending initializers",
		},
		{
			name: "reordering is refused",
			old:  pendingPod(all, allGates...), new: pendingPod("b.example.com,a.example.com,c.example.com", allGates...), user: initializerUser,
			wantErr: apierrors.IsInvalid, wantErrText: "may only remove pending initializers",
		},
		{
			name: "initializing an initialized object is refused",
			old:  pod(nil), new: pendingPod("a.example.com"), user: initializerUser,
			wantErr: apierrors.IsInvalid, wantErrText: "may only remove pending initializers",
		},
		{
			name: "removing the gate of a pending initializer is refused",
			old:  pendingPod(all, allGates...), new: pendingPod(all, "a.example.com", "c.example.com"), user: initializerUser,
			wantErr: apierrors.IsForbidden, wantErrText: "the scheduling gate b.example.com holds the pod",
		},
		{
			name: "an object never initialized updates as usual",
			old:  pod(nil), new: pod(func(p *api.Pod) { p.Labels = map[string]string{"app": "web"} }), user: ordinaryUser,
		},
		{
			name: "a result on an initialized object is refused: it would delete it",
			old:  pod(nil), new: pod(func(p *api.Pod) { p.Annotations = map[string]string{ResultAnnotation: "boom"} }), user: initializerUser,
			wantErr: apierrors.IsInvalid, wantErrText: "immutable once initialization has completed",
		},
		{
			name: "pods/status: removing the list without initialize is refused",
			old:  pendingPod(all, allGates...), new: pod(func(p *api.Pod) { p.Spec.SchedulingGates = pendingPod(all, allGates...).Spec.SchedulingGates }), user: ordinaryUser, subresource: "status",
			wantErr: apierrors.IsInvalid, wantErrText: "not its status subresource",
		},
		{
			name: "pods/status: an initializer removing itself is refused (the status keeps the spec: its gate would stay)",
			old:  pendingPod(all, allGates...), new: pendingPod("b.example.com,c.example.com", allGates...), user: initializerUser, subresource: "status",
			wantErr: apierrors.IsInvalid, wantErrText: "not its status subresource",
		},
		{
			name: "pods/status: dropping the label keeps it, as the list is there",
			old:  pendingPod(all, allGates...), new: pod(func(p *api.Pod) { *p = *pendingPod(all, allGates...); p.Labels = nil }), user: ordinaryUser, subresource: "status",
			wantPending: all, wantGates: allGates,
		},
		{
			name: "pods/resize, like every subresource: removing the list is refused (the list changes through the object only)",
			old:  pendingPod(all, allGates...), new: pod(func(p *api.Pod) { p.Spec.SchedulingGates = pendingPod(all, allGates...).Spec.SchedulingGates }), user: initializerUser, subresource: "resize",
			wantErr: apierrors.IsInvalid, wantErrText: "not its resize subresource",
		},
		{
			name: "a stale copy (another resource version) gets the store's 409 before any initializer check",
			old:  withResourceVersion(pendingPod("b.example.com,c.example.com", "b.example.com", "c.example.com"), "2"),
			new:  withResourceVersion(pendingPod(all, allGates...), "1"), user: initializerUser,
			wantErr: apierrors.IsConflict, wantErrText: `Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again`,
		},
		{
			name: "a stale copy without initialize: 409 too, not 403",
			old:  withResourceVersion(pendingPod("b.example.com,c.example.com", "b.example.com", "c.example.com"), "2"),
			new:  withResourceVersion(pendingPod(all, allGates...), "1"), user: ordinaryUser,
			wantErr: apierrors.IsConflict, wantErrText: "the object has been modified",
		},
		{
			name: "the current resource version: judged as usual",
			old:  withResourceVersion(pendingPod(all, allGates...), "2"), new: withResourceVersion(pendingPod("b.example.com,c.example.com", allGates...), "2"), user: initializerUser,
			wantPending: "b.example.com,c.example.com", wantGates: []string{"b.example.com", "c.example.com"},
		},
		{
			name: "a stale copy of an object never initialized is the store's to refuse",
			old:  withResourceVersion(pod(nil), "2"), new: withResourceVersion(pod(func(p *api.Pod) { p.Labels = map[string]string{"app": "web"} }), "1"), user: ordinaryUser,
		},
		{
			name: "a stored name the rules refuse (written while the plugin was off) does not block removing the others",
			old:  pendingPod(tooLong+",b.example.com", "b.example.com"), new: pendingPod(tooLong, "b.example.com"), user: initializerUser,
			wantPending: tooLong,
		},
		{
			name: "nor removing it",
			old:  pendingPod(tooLong+",b.example.com", "b.example.com"), new: pendingPod("b.example.com", "b.example.com"), user: initializerUser,
			wantPending: "b.example.com", wantGates: []string{"b.example.com"},
		},
		{
			name: "a stored list with an empty name and a duplicate, copied as it is: unchanged, admitted",
			old:  pendingPod("a.example.com,,a.example.com", "a.example.com"), new: pendingPod("a.example.com,,a.example.com", "a.example.com"), user: ordinaryUser,
			wantPending: "a.example.com,a.example.com", wantGates: []string{"a.example.com"},
		},
		{
			name: "a stored duplicate does not block another removal",
			old:  pendingPod("a.example.com,a.example.com,b.example.com", "a.example.com", "b.example.com"), new: pendingPod("a.example.com,a.example.com", "a.example.com", "b.example.com"), user: initializerUser,
			wantPending: "a.example.com,a.example.com", wantGates: []string{"a.example.com"},
		},
		{
			name: "resourceVersion 0 is unconditional, as in the store: judged as usual",
			old:  withResourceVersion(pendingPod(all, allGates...), "2"), new: withResourceVersion(pendingPod("b.example.com,c.example.com", allGates...), "0"), user: initializerUser,
			wantPending: "b.example.com,c.example.com", wantGates: []string{"b.example.com", "c.example.com"},
		},
		{
			name: "an update adding a name the rules refuse is refused",
			old:  pendingPod("b.example.com", "b.example.com"), new: pendingPod(tooLong+",b.example.com", "b.example.com"), user: initializerUser,
			wantErr: apierrors.IsInvalid, wantErrText: "must be no more than 63 bytes",
		},
		{
			name: "pods/status: a result is refused",
			old:  pendingPod(all, allGates...), new: pod(func(p *api.Pod) { *p = *pendingPod(all, allGates...); p.Annotations[ResultAnnotation] = "boom" }), user: initializerUser, subresource: "status",
			wantErr: apierrors.IsInvalid, wantErrText: "not its status subresource",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPlugin(t)
			attributes := updateAttributes(tc.new, tc.old, tc.user, false)
			if tc.subresource != "" {
				attributes = admission.NewAttributesRecord(tc.new, tc.old, podsResource.GroupVersion().WithKind("Pod"), "default", "web", podsResource, tc.subresource, admission.Update, &metav1.UpdateOptions{}, false, tc.user)
			}
			err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), attributes, nil)
			if !checkAdmitted(t, err, tc.wantErr, tc.wantErrText) {
				return
			}
			checkPending(t, tc.new, tc.wantPending)
			if diff := cmp.Diff(tc.wantGates, gates(tc.new)); diff != "" {
				t.Errorf("gates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAFailureResultDeletesTheObject(t *testing.T) {
	policyDenies := func(bool) error {
		return apierrors.NewForbidden(podsResource.GroupResource(), "web", errors.New("ValidatingAdmissionPolicy 'no-deletes' denied request"))
	}
	for _, tc := range []struct {
		name, result string
		dryRun       bool
		user         user.Info
		// refuse is the server's answer to the requester's deletion (nil: admitted).
		refuse      func(dryRun bool) error
		wantCode    int32
		wantMessage string
		// wantJudged: the deletion was tried as a dry run as the requester; wantDeleted: and
		// then made, once the request was done.
		wantJudged, wantDeleted bool
		// wantRecorded is the reason recorded on the object when the deletion was refused
		// after the dry run admitted it.
		wantRecorded string
	}{
		{name: "a Status", result: `{"message":"image not allowed","reason":"Forbidden","code":403}`, user: initializerUser, wantCode: http.StatusForbidden, wantMessage: "image not allowed", wantJudged: true, wantDeleted: true},
		{name: "a message", result: "no sidecar for this image", user: initializerUser, wantCode: http.StatusInternalServerError, wantMessage: "no sidecar for this image", wantJudged: true, wantDeleted: true},
		{name: "a dry run deletes nothing, but is judged", result: "no", dryRun: true, user: initializerUser, wantCode: http.StatusInternalServerError, wantMessage: "no", wantJudged: true},
		{name: "a dry run's deletion refused: the dry run is refused", result: "no", dryRun: true, user: initializerUser, refuse: policyDenies, wantCode: http.StatusForbidden, wantMessage: "'no-deletes' denied", wantJudged: true},
		{name: "without initialize, refused", result: "no", user: ordinaryUser, wantCode: http.StatusForbidden, wantMessage: "update to the initialization of a resource denied"},
		{name: "without delete, refused: the result would delete the object", result: "no", user: initializeOnly, wantCode: http.StatusForbidden,
			wantMessage: `a failure result deletes the object, and the deletion, tried first as a dry run as initialize-only, is refused: pods "web" is forbidden: User "initialize-only" cannot delete`, wantJudged: true},
		{name: "a deletion a policy refuses the requester refuses the result", result: "no", user: initializerUser, refuse: policyDenies, wantCode: http.StatusForbidden,
			wantMessage: "a failure result deletes the object, and the deletion, tried first as a dry run as initializer, is refused: pods \"web\" is forbidden: ValidatingAdmissionPolicy 'no-deletes' denied request", wantJudged: true},
		{name: "a webhook that cannot take a dry run refuses the result", result: "no", user: initializerUser,
			refuse: func(dryRun bool) error {
				return apierrors.NewBadRequest(`admission webhook "audit.example.com" does not support dry run`)
			},
			wantCode: http.StatusBadRequest, wantMessage: `is refused: admission webhook "audit.example.com" does not support dry run`, wantJudged: true},
		{name: "a deletion refused after its dry run is recorded on the object", result: "no", user: initializerUser,
			refuse: func(dryRun bool) error {
				if dryRun {
					return nil
				}
				return policyDenies(false)
			},
			wantCode: http.StatusInternalServerError, wantMessage: "no", wantJudged: true, wantDeleted: true,
			wantRecorded: `deleting as initializer, as the failure result asked: pods "web" is forbidden: ValidatingAdmissionPolicy 'no-deletes' denied request`},
		{name: "a 2xx code is a failure all the same", result: `{"message":"bad","code":200}`, user: initializerUser, wantCode: http.StatusInternalServerError, wantMessage: "bad", wantJudged: true, wantDeleted: true},
		{name: "a code that is no HTTP status", result: `{"message":"bad","code":1000}`, user: initializerUser, wantCode: http.StatusInternalServerError, wantMessage: "bad", wantJudged: true, wantDeleted: true},
		{name: "a negative code", result: `{"message":"bad","code":-1}`, user: initializerUser, wantCode: http.StatusInternalServerError, wantMessage: "bad", wantJudged: true, wantDeleted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := newPlugin(t)
			c.refuse = tc.refuse
			drained := make(chan struct{})
			defer close(drained)
			p.SetDrainedNotification(drained)
			failed := pendingPod("a.example.com", "a.example.com")
			failed.Annotations[ResultAnnotation] = tc.result
			request, done := context.WithCancel(context.Background())
			attributes := &auditRecorder{Attributes: updateAttributes(failed, pendingPod("a.example.com", "a.example.com"), tc.user, tc.dryRun)}
			err := p.Admit(request, attributes, nil)
			status, ok := err.(apierrors.APIStatus)
			if !ok || status.Status().Code != tc.wantCode || !strings.Contains(status.Status().Message, tc.wantMessage) {
				t.Fatalf("got %v, want code %d with %q", err, tc.wantCode, tc.wantMessage)
			}
			// While the request runs, the deletion is only judged: a dry run as the requester.
			judged := c.made(false)
			if got := len(judged); got != map[bool]int{true: 1}[tc.wantJudged] {
				t.Fatalf("deletions during the request: %+v, want one dry run: %v", judged, tc.wantJudged)
			}
			for _, d := range judged {
				checkDeletion(t, d, tc.user.GetName(), true)
			}
			done()
			p.deletions.Wait()
			got := c.made(true)
			if !tc.wantDeleted {
				if len(got) != 0 {
					t.Fatalf("deleted after the request: %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("deletions after the request: %+v, want one", got)
			}
			checkDeletion(t, got[0], tc.user.GetName(), false)
			// The requester's audit event says the deletion is theirs.
			if got := attributes.annotations[DeletionAuditAnnotation]; got != "pods default/web (uid uid-1)" {
				t.Errorf("audit annotation %s = %q", DeletionAuditAnnotation, got)
			}
			var patches []string
			for _, action := range c.server.Actions() {
				if patch, ok := action.(clienttesting.PatchAction); ok {
					patches = append(patches, string(patch.GetPatch()))
				}
			}
			if tc.wantRecorded == "" {
				if len(patches) != 0 {
					t.Errorf("patched %v, want nothing recorded", patches)
				}
				return
			}
			want := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q},"uid":"uid-1"}}`, DeletionErrorAnnotation, tc.wantRecorded)
			if len(patches) != 1 || patches[0] != want {
				t.Errorf("patched %v, want %s", patches, want)
			}
		})
	}
}

// checkDeletion fails unless d deletes the pod web, as user, with its UID as precondition,
// as a dry run or not.
func checkDeletion(t *testing.T, d deletion, user string, dryRun bool) {
	t.Helper()
	options := d.action.GetDeleteOptions()
	if d.user != user || d.dryRun != dryRun || d.action.GetName() != "web" || d.action.GetNamespace() != "default" ||
		d.action.GetResource() != podsResource || options.Preconditions == nil || options.Preconditions.UID == nil || *options.Preconditions.UID != "uid-1" ||
		options.Preconditions.ResourceVersion != nil || // a write after the result must not save the object
		options.PropagationPolicy == nil || *options.PropagationPolicy != metav1.DeletePropagationBackground {
		t.Errorf("deletion %+v (options %+v), want the pod web with its UID alone as precondition and its dependents in the background, as %s, dry run %v", d, options, user, dryRun)
	}
}

// TestAFailureResultsDeletionIsTheLastAttempts: the storage runs an update's admission
// again on the stored object when the first attempt judged a stale cached copy; only the
// last attempt's decision deletes.
func TestAFailureResultsDeletionIsTheLastAttempts(t *testing.T) {
	at := func(version string, p *api.Pod) *api.Pod {
		p.ResourceVersion = version
		return p
	}
	failed := func(version string) *api.Pod {
		p := at(version, pendingPod("a.example.com", "a.example.com"))
		p.Annotations[ResultAnnotation] = "no"
		return p
	}
	initialized := func(version string) *api.Pod { return at(version, pod(nil)) }
	for _, tc := range []struct {
		name string
		// attempts are the old objects the storage judged the update against, in order,
		// with the update's object (the result on the client's copy).
		attempts    [][2]*api.Pod
		wantDeleted int
	}{
		{name: "a stale copy failed, the stored one is initialized: nothing deleted",
			attempts: [][2]*api.Pod{{failed("5"), at("5", pendingPod("a.example.com", "a.example.com"))}, {failed("5"), initialized("6")}}},
		{name: "a PUT: a stale copy failed, the stored one is newer (409): nothing deleted",
			attempts: [][2]*api.Pod{{failed("5"), at("5", pendingPod("a.example.com", "a.example.com"))}, {failed("5"), at("6", pendingPod("a.example.com", "a.example.com"))}}},
		{name: "a patch: a stale copy failed, and the stored one: the stored version deleted, once",
			attempts:    [][2]*api.Pod{{failed("5"), at("5", pendingPod("a.example.com", "a.example.com"))}, {failed("6"), at("6", pendingPod("a.example.com", "a.example.com"))}},
			wantDeleted: 1},
		{name: "one attempt: its version deleted",
			attempts:    [][2]*api.Pod{{failed("5"), at("5", pendingPod("a.example.com", "a.example.com"))}},
			wantDeleted: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := newPlugin(t)
			drained := make(chan struct{})
			defer close(drained)
			p.SetDrainedNotification(drained)
			request, done := context.WithCancel(audit.WithAuditContext(context.Background()))
			audit.WithAuditID(request, "request-1")
			for _, attempt := range tc.attempts {
				_ = p.Admit(request, updateAttributes(attempt[0].DeepCopy(), attempt[1], initializerUser, false), nil)
			}
			done()
			p.deletions.Wait()
			if deleted := c.made(true); len(deleted) != tc.wantDeleted {
				t.Errorf("deletions %+v, want %d", deleted, tc.wantDeleted)
			}
			if _, left := p.attempts.Load(attemptKey{request: "request-1", object: "uid-1", user: initializerUser.GetName()}); left {
				t.Error("the request's attempts are still counted after it ended")
			}
		})
	}
}

// TestAFailureResultsDeletionIsRetried: a deletion the server does not answer (429, 5xx)
// is tried again; one it refuses is not.
func TestAFailureResultsDeletionIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name         string
		answers      []error // to the real deletion's tries, in order; then nil
		wantTries    int
		wantRecorded bool
	}{
		{name: "throttled twice, then deleted", answers: []error{apierrors.NewTooManyRequests("slow down", 1), apierrors.NewInternalError(errors.New("etcd"))}, wantTries: 3},
		{name: "refused: not retried, recorded", answers: []error{apierrors.NewForbidden(podsResource.GroupResource(), "web", errors.New("policy"))}, wantTries: 1, wantRecorded: true},
		{name: "never answered: five tries, recorded", answers: slices.Repeat([]error{apierrors.NewServiceUnavailable("down")}, 10), wantTries: 5, wantRecorded: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := newPlugin(t)
			p.deleteRetries = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 5}
			var tries int
			c.refuse = func(dryRun bool) error {
				if dryRun {
					return nil
				}
				tries++
				if tries <= len(tc.answers) {
					return tc.answers[tries-1]
				}
				return nil
			}
			drained := make(chan struct{})
			defer close(drained)
			p.SetDrainedNotification(drained)
			failed := pendingPod("a.example.com", "a.example.com")
			failed.Annotations[ResultAnnotation] = "no"
			request, done := context.WithCancel(context.Background())
			_ = p.Admit(request, updateAttributes(failed, pendingPod("a.example.com", "a.example.com"), initializerUser, false), nil)
			done()
			p.deletions.Wait()
			if tries != tc.wantTries {
				t.Errorf("%d tries, want %d", tries, tc.wantTries)
			}
			recorded := slices.ContainsFunc(c.server.Actions(), func(a clienttesting.Action) bool { return a.GetVerb() == "patch" })
			if recorded != tc.wantRecorded {
				t.Errorf("recorded on the object: %t, want %t", recorded, tc.wantRecorded)
			}
		})
	}
}

// auditRecorder keeps the audit annotations a plugin adds.
type auditRecorder struct {
	admission.Attributes
	annotations map[string]string
}

func (a *auditRecorder) AddAnnotation(key, value string) error {
	if a.annotations == nil {
		a.annotations = map[string]string{}
	}
	a.annotations[key] = value
	return nil
}

// TestReinvocation runs the plugin as the server does when a mutating webhook changed a new
// object after the plugin ran: a second time, on the object the first run and the webhook
// made. The creator's authority and the first run's list decide; the second run neither
// asks for initialize (the annotation is the plugin's own) nor lets the webhook change the
// list.
func TestReinvocation(t *testing.T) {
	const all = "podimage.example.com,policy.example.com,sidecar.example.com"
	for _, tc := range []struct {
		name        string
		obj         *api.Pod
		user        user.Info
		webhook     func(*api.Pod)
		wantPending string
		wantGates   []string
	}{
		{
			name: "a user without initialize, a webhook that labels the pod",
			obj:  pod(nil), user: ordinaryUser,
			webhook:     func(p *api.Pod) { p.Labels["injected"] = "true" },
			wantPending: all, wantGates: strings.Split(all, ","),
		},
		{
			name: "a webhook that drops the list and the gates does not bypass initialization",
			obj:  pod(nil), user: ordinaryUser,
			webhook: func(p *api.Pod) {
				delete(p.Annotations, PendingAnnotation)
				delete(p.Labels, UninitializedLabel)
				p.Spec.SchedulingGates = nil
			},
			wantPending: all, wantGates: strings.Split(all, ","),
		},
		{
			name: "a webhook that names an initializer adds none",
			obj:  pod(nil), user: ordinaryUser,
			webhook:     func(p *api.Pod) { p.Annotations[PendingAnnotation] = "extra.example.com," + all },
			wantPending: all, wantGates: strings.Split(all, ","),
		},
		{
			name: "a bypass by a user with initialize stays a bypass",
			obj:  pod(func(p *api.Pod) { p.Annotations = map[string]string{PendingAnnotation: ""} }), user: initializerUser,
			webhook: func(p *api.Pod) { p.Labels = map[string]string{"injected": "true"} },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPlugin(t, configurations()...)
			attributes := createAttributes(tc.obj, podsResource, "Pod", tc.user)
			if err := p.Admit(context.Background(), attributes, nil); err != nil {
				t.Fatalf("first run: %v", err)
			}
			tc.webhook(tc.obj)
			attributes.GetReinvocationContext().SetIsReinvoke()
			if err := p.Admit(context.Background(), attributes, nil); err != nil {
				t.Fatalf("second run: %v", err)
			}
			checkPending(t, tc.obj, tc.wantPending)
			if diff := cmp.Diff(tc.wantGates, gates(tc.obj)); diff != "" {
				t.Errorf("gates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMatching(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []admissionregistrationv1alpha1.Rule
		want  bool
	}{
		{name: "no rule matches nothing"},
		{name: "one rule", rules: []admissionregistrationv1alpha1.Rule{rule("apps", "v1", "deployments")}, want: true},
		{name: "any rule, not every rule (1.13's code required every one)", rules: []admissionregistrationv1alpha1.Rule{rule("", "v1", "pods"), rule("apps", "v1", "deployments")}, want: true},
		{name: "wildcards", rules: []admissionregistrationv1alpha1.Rule{rule("*", "*", "*")}, want: true},
		{name: "another group", rules: []admissionregistrationv1alpha1.Rule{rule("extensions", "*", "deployments")}},
		{name: "another version", rules: []admissionregistrationv1alpha1.Rule{rule("apps", "v1beta1", "deployments")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := matchesAny(tc.rules, deploymentsResource); got != tc.want {
				t.Errorf("matchesAny = %v, want %v", got, tc.want)
			}
		})
	}
	// The same initializer in two configurations is pending once, where it comes first.
	got := initializersFor(sortedByName([]*admissionregistrationv1alpha1.InitializerConfiguration{
		configuration("z", initializer("x.example.com", rule("*", "*", "*"))),
		configuration("a", initializer("y.example.com", rule("*", "*", "*")), initializer("x.example.com", rule("*", "*", "*"))),
	}), podsResource, nil)
	if want := []string{"y.example.com", "x.example.com"}; !slices.Equal(got, want) {
		t.Errorf("initializersFor = %v, want %v", got, want)
	}
}

// TestMatchPolicy: a rule for autoscaling/v2 horizontalpodautoscalers holds an object created
// through autoscaling/v1 unless its initializer's match policy is Exact (1.13 matched exactly;
// webhooks default to Equivalent, and so do initializers).
func TestMatchPolicy(t *testing.T) {
	v1 := schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}
	v2 := v1.GroupResource().WithVersion("v2")
	mapper := runtime.NewEquivalentResourceRegistry()
	for _, r := range []schema.GroupVersionResource{v1, v2} {
		mapper.RegisterKindFor(r, "", r.GroupVersion().WithKind("HorizontalPodAutoscaler"))
	}
	objectInterfaces := equivalentResources{ObjectInterfaces: admission.NewObjectInterfacesFromScheme(runtime.NewScheme()), mapper: mapper}
	policy := func(p admissionregistrationv1alpha1.MatchPolicyType) *admissionregistrationv1alpha1.MatchPolicyType {
		return &p
	}
	for _, tc := range []struct {
		name     string
		policy   *admissionregistrationv1alpha1.MatchPolicyType
		resource schema.GroupVersionResource
		want     string
	}{
		{name: "the version the rule names, Exact", policy: policy(admissionregistrationv1alpha1.Exact), resource: v2, want: "hpa.example.com"},
		{name: "another served version, Exact: not held (1.13)", policy: policy(admissionregistrationv1alpha1.Exact), resource: v1},
		{name: "another served version, Equivalent", policy: policy(admissionregistrationv1alpha1.Equivalent), resource: v1, want: "hpa.example.com"},
		{name: "another served version, no policy: Equivalent by default", resource: v1, want: "hpa.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := initializer("hpa.example.com", rule("autoscaling", "v2", "horizontalpodautoscalers"))
			i.MatchPolicy = tc.policy
			p, _ := newPlugin(t, configuration("hpa", i))
			created := &autoscaling.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
			a := admission.NewAttributesRecord(created, nil, tc.resource.GroupVersion().WithKind("HorizontalPodAutoscaler"), "default", "web", tc.resource, "", admission.Create, &metav1.CreateOptions{}, false, ordinaryUser)
			if err := p.Admit(context.Background(), a, objectInterfaces); err != nil {
				t.Fatal(err)
			}
			if got := created.Annotations[PendingAnnotation]; got != tc.want {
				t.Errorf("pending %q, want %q", got, tc.want)
			}
		})
	}
}

// equivalentResources are the server's object interfaces with its map of the resources
// that serve the same objects.
type equivalentResources struct {
	admission.ObjectInterfaces
	mapper runtime.EquivalentResourceMapper
}

func (e equivalentResources) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return e.mapper
}

// TestStoredNameTooLongForAGate: a configuration stored before the 63-character limit is
// applied without its invalid initializer, so that matched pods are still created.
func TestStoredNameTooLongForAGate(t *testing.T) {
	long := strings.Repeat("a", 60) + ".example.com"
	stored := configuration("old", initializer(long, rule("", "v1", "pods")), initializer("short.example.com", rule("", "v1", "pods")))
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(stored)
	if err != nil {
		t.Fatal(err)
	}
	typed, err := toTyped(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := newPlugin(t, typed.(*admissionregistrationv1alpha1.InitializerConfiguration))
	created := pod(nil)
	if err := p.Admit(context.Background(), createAttributes(created, podsResource, "Pod", ordinaryUser), nil); err != nil {
		t.Fatal(err)
	}
	checkPending(t, created, "short.example.com")
	if diff := cmp.Diff([]string{"short.example.com"}, gates(created)); diff != "" {
		t.Errorf("gates (-want +got):\n%s", diff)
	}
}
