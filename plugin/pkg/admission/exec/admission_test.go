package exec

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	api "k8s.io/kubernetes/pkg/apis/core"
)

func privileged() *corev1.SecurityContext {
	t := true
	return &corev1.SecurityContext{Privileged: &t}
}

func pod(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "target", Namespace: "ns"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers:     []corev1.Container{{Name: "app"}, {Name: "sidecar"}},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// connect returns the attributes of a CONNECT to pods/<subresource> of the target pod.
func connect(subresource string, op admission.Operation) admission.Attributes {
	var opts runtime.Object = &api.PodExecOptions{}
	if subresource == "attach" {
		opts = &api.PodAttachOptions{}
	}
	return admission.NewAttributesRecord(opts, nil, api.Kind("Pod").WithVersion("v1"), "ns", "target",
		api.Resource("pods").WithVersion("v1"), subresource, op, nil, false, nil)
}

func newPlugin(t *testing.T, name string, objects ...runtime.Object) (*Plugin, *fake.Clientset) {
	t.Helper()
	var p *Plugin
	switch name {
	case DenyEscalatingExecPluginName:
		p = NewDenyEscalatingExec()
	case DenyExecOnPrivilegedPluginName:
		p = NewDenyExecOnPrivileged()
	}
	client := fake.NewClientset(objects...)
	p.SetExternalKubeClientSet(client)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p, client
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		// want is the refusal per plugin; nil means the connection is admitted.
		want map[string]error
	}{
		{name: "plain pod", pod: pod(nil), want: map[string]error{}},
		{
			name: "host network",
			pod:  pod(func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			want: map[string]error{DenyEscalatingExecPluginName: ErrHostNetwork},
		},
		{
			name: "host pid",
			pod:  pod(func(p *corev1.Pod) { p.Spec.HostPID = true }),
			want: map[string]error{DenyEscalatingExecPluginName: ErrHostPID},
		},
		{
			name: "host ipc",
			pod:  pod(func(p *corev1.Pod) { p.Spec.HostIPC = true }),
			want: map[string]error{DenyEscalatingExecPluginName: ErrHostIPC},
		},
		{
			name: "privileged regular container, not the first",
			pod:  pod(func(p *corev1.Pod) { p.Spec.Containers[1].SecurityContext = privileged() }),
			want: map[string]error{DenyEscalatingExecPluginName: ErrPrivileged, DenyExecOnPrivilegedPluginName: ErrPrivileged},
		},
		{
			name: "privileged init container only",
			pod:  pod(func(p *corev1.Pod) { p.Spec.InitContainers[0].SecurityContext = privileged() }),
			want: map[string]error{DenyEscalatingExecPluginName: ErrPrivileged, DenyExecOnPrivilegedPluginName: ErrPrivileged},
		},
		{
			name: "privileged ephemeral container",
			pod: pod(func(p *corev1.Pod) {
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", SecurityContext: privileged()}}}
			}),
			want: map[string]error{DenyEscalatingExecPluginName: ErrPrivileged, DenyExecOnPrivilegedPluginName: ErrPrivileged},
		},
		{
			name: "privileged: false is not privileged",
			pod: pod(func(p *corev1.Pod) {
				f := false
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &f}
			}),
			want: map[string]error{},
		},
		{
			name: "first hit wins: host network before host pid, ipc and privileged",
			pod: pod(func(p *corev1.Pod) {
				p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
				p.Spec.Containers[0].SecurityContext = privileged()
			}),
			want: map[string]error{DenyEscalatingExecPluginName: ErrHostNetwork, DenyExecOnPrivilegedPluginName: ErrPrivileged},
		},
		{
			name: "first hit wins: host pid before host ipc",
			pod:  pod(func(p *corev1.Pod) { p.Spec.HostPID, p.Spec.HostIPC = true, true }),
			want: map[string]error{DenyEscalatingExecPluginName: ErrHostPID},
		},
	}
	for _, plugin := range []string{DenyEscalatingExecPluginName, DenyExecOnPrivilegedPluginName} {
		for _, sub := range []string{"exec", "attach"} {
			for _, tc := range tests {
				t.Run(plugin+"/"+sub+"/"+tc.name, func(t *testing.T) {
					p, _ := newPlugin(t, plugin, tc.pod)
					err := p.Validate(context.Background(), connect(sub, admission.Connect), nil)
					want := tc.want[plugin]
					if want == nil {
						if err != nil {
							t.Fatalf("want admitted, got %v", err)
						}
						return
					}
					if !apierrors.IsForbidden(err) {
						t.Fatalf("want 403 Forbidden, got %v", err)
					}
					if !strings.Contains(err.Error(), want.Error()) {
						t.Errorf("got %q, want it to say %q", err.Error(), want.Error())
					}
				})
			}
		}
	}
}

func TestIgnored(t *testing.T) {
	hostile := pod(func(p *corev1.Pod) {
		p.Spec.HostNetwork = true
		p.Spec.Containers[0].SecurityContext = privileged()
	})
	for _, plugin := range []string{DenyEscalatingExecPluginName, DenyExecOnPrivilegedPluginName} {
		p, client := newPlugin(t, plugin, hostile)
		for _, sub := range []string{"portforward", "proxy", "log", "status", ""} {
			if err := p.Validate(context.Background(), connect(sub, admission.Connect), nil); err != nil {
				t.Errorf("%s: CONNECT pods/%s refused: %v", plugin, sub, err)
			}
		}
		other := admission.NewAttributesRecord(&api.PodExecOptions{}, nil, api.Kind("Service").WithVersion("v1"), "ns", "target",
			api.Resource("services").WithVersion("v1"), "proxy", admission.Connect, nil, false, nil)
		if err := p.Validate(context.Background(), other, nil); err != nil {
			t.Errorf("%s: CONNECT services/proxy refused: %v", plugin, err)
		}
		if n := len(client.Actions()); n != 0 {
			t.Errorf("%s: ignored requests made %d API calls", plugin, n)
		}
		for _, op := range []admission.Operation{admission.Create, admission.Update, admission.Delete} {
			if p.Handles(op) {
				t.Errorf("%s handles %s", plugin, op)
			}
		}
		if !p.Handles(admission.Connect) {
			t.Errorf("%s does not handle CONNECT", plugin)
		}
	}
}

func TestReadFailureDenies(t *testing.T) {
	for _, plugin := range []string{DenyEscalatingExecPluginName, DenyExecOnPrivilegedPluginName} {
		t.Run(plugin+"/pod not found", func(t *testing.T) {
			p, _ := newPlugin(t, plugin) // no pod
			err := p.Validate(context.Background(), connect("exec", admission.Connect), nil)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot verify the target pod") || !strings.Contains(err.Error(), "not found") {
				t.Fatalf("want 403 saying the pod could not be read, got %v", err)
			}
		})
		t.Run(plugin+"/server error", func(t *testing.T) {
			p, client := newPlugin(t, plugin, pod(nil))
			client.PrependReactor("get", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("etcd is on fire")
			})
			err := p.Validate(context.Background(), connect("attach", admission.Connect), nil)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "etcd is on fire") {
				t.Fatalf("want 403 carrying the read error, got %v", err)
			}
		})
	}
}

func TestReadsThePodLive(t *testing.T) {
	p, client := newPlugin(t, DenyEscalatingExecPluginName, pod(nil))
	for i := 0; i < 2; i++ {
		if err := p.Validate(context.Background(), connect("exec", admission.Connect), nil); err != nil {
			t.Fatal(err)
		}
	}
	gets := 0
	for _, action := range client.Actions() {
		if action.Matches("get", "pods") {
			gets++
		}
	}
	if gets != 2 {
		t.Errorf("want one GET per request, got %d for 2 requests", gets)
	}
}

func TestInitializationNeedsAClient(t *testing.T) {
	if err := NewDenyEscalatingExec().ValidateInitialization(); err == nil {
		t.Error("DenyEscalatingExec initialized without a client")
	}
	if err := NewDenyExecOnPrivileged().ValidateInitialization(); err == nil {
		t.Error("DenyExecOnPrivileged initialized without a client")
	}
}

// BenchmarkDecide measures the decision alone (the GET excluded) for a typical pod: a
// Deployment's pod with an init container, two containers and restricted settings.
func BenchmarkDecide(b *testing.B) {
	f := false
	typical := pod(func(p *corev1.Pod) {
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{Privileged: &f}
		}
	})
	for _, p := range []*Plugin{NewDenyEscalatingExec(), NewDenyExecOnPrivileged()} {
		name := "DenyExecOnPrivileged"
		if p.hostNamespaces {
			name = "DenyEscalatingExec"
		}
		b.Run(name+"/checked-typical-pod", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Decide(typical); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateIgnored measures the requests the plugins let through without reading
// the pod: CONNECTs to pod subresources other than exec and attach, and to other resources.
func BenchmarkValidateIgnored(b *testing.B) {
	cases := map[string]admission.Attributes{
		"ignored-pod-portforward": connect("portforward", admission.Connect),
		"ignored-service-proxy": admission.NewAttributesRecord(&api.PodExecOptions{}, nil, api.Kind("Service").WithVersion("v1"), "ns", "target",
			api.Resource("services").WithVersion("v1"), "proxy", admission.Connect, nil, false, nil),
	}
	for _, p := range []*Plugin{NewDenyEscalatingExec(), NewDenyExecOnPrivileged()} {
		name := "DenyExecOnPrivileged"
		if p.hostNamespaces {
			name = "DenyEscalatingExec"
		}
		client := fake.NewClientset()
		p.SetExternalKubeClientSet(client)
		for caseName, attrs := range cases {
			b.Run(name+"/"+caseName, func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if err := p.Validate(ctx, attrs, nil); err != nil {
						b.Fatal(err)
					}
				}
				if n := len(client.Actions()); n != 0 {
					b.Fatalf("an ignored request made %d API calls", n)
				}
			})
		}
	}
}
