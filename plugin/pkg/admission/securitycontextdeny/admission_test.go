package securitycontextdeny

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
)

func int64Ptr(v int64) *int64 { return &v }

func newPod(mutate func(*api.Pod)) *api.Pod {
	pod := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: api.PodSpec{
			InitContainers: []api.Container{{Name: "init"}},
			Containers:     []api.Container{{Name: "a"}, {Name: "b"}},
		},
	}
	if mutate != nil {
		mutate(pod)
	}
	return pod
}

// attributes returns a request for obj; old is the stored object of an UPDATE.
func attributes(obj, old runtime.Object, resource, subresource string, op admission.Operation) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, api.Kind("Pod").WithVersion("version"), "ns", "p",
		api.Resource(resource).WithVersion("version"), subresource, op, nil, false, nil)
}

func TestValidate(t *testing.T) {
	seLinux := &api.SELinuxOptions{Level: "s0:c1"}
	legacyRootDebugger := api.EphemeralContainer{EphemeralContainerCommon: api.EphemeralContainerCommon{
		Name: "legacy", SecurityContext: &api.SecurityContext{RunAsUser: int64Ptr(0)}}}
	tests := []struct {
		name        string
		object      runtime.Object
		old         runtime.Object // the stored pod, for UPDATE
		resource    string
		subresource string
		operation   admission.Operation
		// wantForbidden lists every message the rejection must contain; empty means admitted.
		wantForbidden  []string
		wantBadRequest bool
	}{
		{name: "plain pod is admitted", object: newPod(nil), resource: "pods", operation: admission.Create},
		{
			name:     "pod security context with only allowed fields is admitted",
			object:   newPod(func(p *api.Pod) { p.Spec.SecurityContext = &api.PodSecurityContext{RunAsNonRoot: new(bool)} }),
			resource: "pods", operation: admission.Create,
		},
		{
			name:     "container security context with only allowed fields is admitted",
			object:   newPod(func(p *api.Pod) { p.Spec.Containers[0].SecurityContext = &api.SecurityContext{RunAsGroup: int64Ptr(5)} }),
			resource: "pods", operation: admission.Create,
		},
		{
			name:     "pod supplementalGroups",
			object:   newPod(func(p *api.Pod) { p.Spec.SecurityContext = &api.PodSecurityContext{SupplementalGroups: []int64{1}} }),
			resource: "pods", operation: admission.Create,
			wantForbidden: []string{"pod.Spec.SecurityContext.SupplementalGroups is forbidden"},
		},
		{
			name:     "pod seLinuxOptions",
			object:   newPod(func(p *api.Pod) { p.Spec.SecurityContext = &api.PodSecurityContext{SELinuxOptions: seLinux} }),
			resource: "pods", operation: admission.Create,
			wantForbidden: []string{"pod.Spec.SecurityContext.SELinuxOptions is forbidden"},
		},
		{
			name:     "pod runAsUser",
			object:   newPod(func(p *api.Pod) { p.Spec.SecurityContext = &api.PodSecurityContext{RunAsUser: int64Ptr(0)} }),
			resource: "pods", operation: admission.Create,
			wantForbidden: []string{"pod.Spec.SecurityContext.RunAsUser is forbidden"},
		},
		{
			name:     "pod fsGroup",
			object:   newPod(func(p *api.Pod) { p.Spec.SecurityContext = &api.PodSecurityContext{FSGroup: int64Ptr(2000)} }),
			resource: "pods", operation: admission.Create,
			wantForbidden: []string{"pod.Spec.SecurityContext.FSGroup is forbidden"},
		},
		{
			name:     "second container runAsUser names its index",
			object:   newPod(func(p *api.Pod) { p.Spec.Containers[1].SecurityContext = &api.SecurityContext{RunAsUser: int64Ptr(0)} }),
			resource: "pods", operation: admission.Create,
			wantForbidden: []string{"spec.containers[1].securityContext.runAsUser is forbidden"},
		},
		{
			name:     "container seLinuxOptions",
			object:   newPod(func(p *api.Pod) { p.Spec.Containers[0].SecurityContext = &api.SecurityContext{SELinuxOptions: seLinux} }),
			resource: "pods", operation: admission.Create,
			wantForbidden: []string{"spec.containers[0].securityContext.seLinuxOptions is forbidden"},
		},
		{
			name: "init container runAsUser",
			object: newPod(func(p *api.Pod) {
				p.Spec.InitContainers[0].SecurityContext = &api.SecurityContext{RunAsUser: int64Ptr(0)}
			}),
			resource: "pods", operation: admission.Create,
			wantForbidden: []string{"spec.initContainers[0].securityContext.runAsUser is forbidden"},
		},
		{
			name: "every violation is reported at once",
			object: newPod(func(p *api.Pod) {
				p.Spec.SecurityContext = &api.PodSecurityContext{RunAsUser: int64Ptr(0), FSGroup: int64Ptr(1)}
				p.Spec.InitContainers[0].SecurityContext = &api.SecurityContext{SELinuxOptions: seLinux}
				p.Spec.Containers[1].SecurityContext = &api.SecurityContext{RunAsUser: int64Ptr(0)}
			}),
			resource: "pods", operation: admission.Create,
			wantForbidden: []string{
				"pod.Spec.SecurityContext.RunAsUser is forbidden",
				"pod.Spec.SecurityContext.FSGroup is forbidden",
				"spec.initContainers[0].securityContext.seLinuxOptions is forbidden",
				"spec.containers[1].securityContext.runAsUser is forbidden",
			},
		},
		{
			name:     "update is checked like create",
			object:   newPod(func(p *api.Pod) { p.Spec.SecurityContext = &api.PodSecurityContext{RunAsUser: int64Ptr(0)} }),
			old:      newPod(nil),
			resource: "pods", operation: admission.Update,
			wantForbidden: []string{"pod.Spec.SecurityContext.RunAsUser is forbidden"},
		},
		{
			name: "ephemeral container runAsUser through the ephemeralcontainers subresource",
			object: newPod(func(p *api.Pod) {
				p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{
					Name: "debug", SecurityContext: &api.SecurityContext{RunAsUser: int64Ptr(0)}}}}
			}),
			old:      newPod(nil),
			resource: "pods", subresource: "ephemeralcontainers", operation: admission.Update,
			wantForbidden: []string{"spec.ephemeralContainers[0].securityContext.runAsUser is forbidden"},
		},
		{
			name: "ephemeral container seLinuxOptions through the ephemeralcontainers subresource",
			object: newPod(func(p *api.Pod) {
				p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{
					Name: "debug", SecurityContext: &api.SecurityContext{SELinuxOptions: seLinux}}}}
			}),
			old:      newPod(nil),
			resource: "pods", subresource: "ephemeralcontainers", operation: admission.Update,
			wantForbidden: []string{"spec.ephemeralContainers[0].securityContext.seLinuxOptions is forbidden"},
		},
		{
			name: "plain ephemeral container is admitted",
			object: newPod(func(p *api.Pod) {
				p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug"}}}
			}),
			old:      newPod(nil),
			resource: "pods", subresource: "ephemeralcontainers", operation: admission.Update,
		},
		{
			// A pod that took a non-compliant ephemeral container before the plugin was enabled
			// can still be debugged with a compliant one.
			name: "a compliant ephemeral container is admitted beside an older non-compliant one",
			object: newPod(func(p *api.Pod) {
				p.Spec.EphemeralContainers = []api.EphemeralContainer{legacyRootDebugger, {EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug"}}}
			}),
			old:      newPod(func(p *api.Pod) { p.Spec.EphemeralContainers = []api.EphemeralContainer{legacyRootDebugger} }),
			resource: "pods", subresource: "ephemeralcontainers", operation: admission.Update,
		},
		{
			name: "only the added ephemeral container is judged",
			object: newPod(func(p *api.Pod) {
				p.Spec.EphemeralContainers = []api.EphemeralContainer{legacyRootDebugger, {EphemeralContainerCommon: api.EphemeralContainerCommon{
					Name: "debug", SecurityContext: &api.SecurityContext{SELinuxOptions: seLinux}}}}
			}),
			old:      newPod(func(p *api.Pod) { p.Spec.EphemeralContainers = []api.EphemeralContainer{legacyRootDebugger} }),
			resource: "pods", subresource: "ephemeralcontainers", operation: admission.Update,
			wantForbidden: []string{"spec.ephemeralContainers[1].securityContext.seLinuxOptions is forbidden"},
		},
		{
			name: "without an old pod every ephemeral container is judged",
			object: newPod(func(p *api.Pod) {
				p.Spec.EphemeralContainers = []api.EphemeralContainer{legacyRootDebugger}
			}),
			resource: "pods", subresource: "ephemeralcontainers", operation: admission.Update,
			wantForbidden: []string{"spec.ephemeralContainers[0].securityContext.runAsUser is forbidden"},
		},
		{
			name:     "other subresources are ignored",
			object:   newPod(func(p *api.Pod) { p.Spec.SecurityContext = &api.PodSecurityContext{RunAsUser: int64Ptr(0)} }),
			old:      newPod(nil),
			resource: "pods", subresource: "status", operation: admission.Update,
		},
		{
			name:     "other resources are ignored",
			object:   &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}},
			resource: "configmaps", operation: admission.Create,
		},
		{
			name:     "a pods request whose object is not a pod is a bad request",
			object:   &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}},
			resource: "pods", operation: admission.Create,
			wantBadRequest: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := New().Validate(context.Background(), attributes(tc.object, tc.old, tc.resource, tc.subresource, tc.operation), nil)
			switch {
			case tc.wantBadRequest:
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("want a 400 Bad Request, got %v", err)
				}
			case len(tc.wantForbidden) == 0:
				if err != nil {
					t.Fatalf("want the pod admitted, got %v", err)
				}
			default:
				if !apierrors.IsForbidden(err) {
					t.Fatalf("want a 403 Forbidden, got %v", err)
				}
				for _, msg := range tc.wantForbidden {
					if !strings.Contains(err.Error(), msg) {
						t.Errorf("error %q does not name %q", err.Error(), msg)
					}
				}
				if got := strings.Count(err.Error(), "is forbidden"); got != len(tc.wantForbidden)+1 {
					// +1: the "pods \"p\" is forbidden" prefix of every Forbidden error.
					t.Errorf("error %q reports %d violations, want %d", err.Error(), got-1, len(tc.wantForbidden))
				}
			}
		})
	}
}

func TestHandles(t *testing.T) {
	plugin := New()
	for op, want := range map[admission.Operation]bool{
		admission.Create:  true,
		admission.Update:  true,
		admission.Delete:  false,
		admission.Connect: false,
	} {
		if got := plugin.Handles(op); got != want {
			t.Errorf("Handles(%s) = %v, want %v", op, got, want)
		}
	}
}

func TestRegister(t *testing.T) {
	plugins := admission.NewPlugins()
	Register(plugins)
	plugin, err := plugins.InitPlugin(PluginName, nil, admission.PluginInitializers{})
	if err != nil {
		t.Fatalf("building the registered plugin: %v", err)
	}
	if _, ok := plugin.(*Plugin); !ok {
		t.Fatalf("the registered factory built a %T, want *Plugin", plugin)
	}
}

// typicalPod is a pod as a Deployment would create it: several containers, a restricted-style
// security context that uses only allowed fields.
func typicalPod() *api.Pod {
	return newPod(func(p *api.Pod) {
		nonRoot := true
		p.Spec.SecurityContext = &api.PodSecurityContext{RunAsNonRoot: &nonRoot}
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].SecurityContext = &api.SecurityContext{RunAsNonRoot: &nonRoot}
		}
	})
}

func BenchmarkValidate(b *testing.B) {
	plugin := New()
	ctx := context.Background()
	cases := map[string]admission.Attributes{
		"ignored-configmap": attributes(&api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, nil, "configmaps", "", admission.Create),
		// The kubelet's status updates: the most frequent pod writes, and not the plugin's concern.
		"ignored-pod-status-update": attributes(typicalPod(), typicalPod(), "pods", "status", admission.Update),
		"checked-allowed":           attributes(typicalPod(), nil, "pods", "", admission.Create),
	}
	for name, attrs := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := plugin.Validate(ctx, attrs, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
