// Package exec restores the DenyEscalatingExec and DenyExecOnPrivileged admission
// controllers that upstream removed in Kubernetes 1.21.
//
// On `kubectl exec` and `kubectl attach` the object under admission is PodExecOptions or
// PodAttachOptions, not the pod, so neither PodSecurity nor a ValidatingAdmissionPolicy can
// see that the target pod shares the host's namespaces or runs privileged. These plugins
// look the pod up and refuse the connection.
package exec

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/kubernetes"
	api "k8s.io/kubernetes/pkg/apis/core"
)

const (
	// DenyEscalatingExecPluginName refuses exec and attach into pods that share a host
	// namespace or run any privileged container.
	DenyEscalatingExecPluginName = "DenyEscalatingExec"
	// DenyExecOnPrivilegedPluginName refuses exec and attach into pods that run any
	// privileged container.
	DenyExecOnPrivilegedPluginName = "DenyExecOnPrivileged"
)

// RegisterDenyEscalatingExec registers DenyEscalatingExec. It takes no configuration.
func RegisterDenyEscalatingExec(plugins *admission.Plugins) {
	plugins.Register(DenyEscalatingExecPluginName, func(io.Reader) (admission.Interface, error) {
		return NewDenyEscalatingExec(), nil
	})
}

// RegisterDenyExecOnPrivileged registers DenyExecOnPrivileged. It takes no configuration.
func RegisterDenyExecOnPrivileged(plugins *admission.Plugins) {
	plugins.Register(DenyExecOnPrivilegedPluginName, func(io.Reader) (admission.Interface, error) {
		return NewDenyExecOnPrivileged(), nil
	})
}

// Reasons for refusing, one per condition, in the order they are checked. They are
// allocated once so that deciding allocates nothing.
var (
	ErrHostNetwork = errors.New("cannot exec into or attach to a container using host network")
	ErrHostPID     = errors.New("cannot exec into or attach to a container using host pid")
	ErrHostIPC     = errors.New("cannot exec into or attach to a container using host ipc")
	ErrPrivileged  = errors.New("cannot exec into or attach to a privileged container")
)

// Plugin refuses CONNECT to pods/exec and pods/attach when the target pod is one the
// plugin's policy forbids.
type Plugin struct {
	*admission.Handler
	client kubernetes.Interface
	// hostNamespaces makes host network, PID and IPC grounds for refusal too.
	hostNamespaces bool
}

var (
	_ admission.ValidationInterface                   = &Plugin{}
	_ genericadmissioninit.WantsExternalKubeClientSet = &Plugin{}
)

// NewDenyEscalatingExec returns the DenyEscalatingExec plugin.
func NewDenyEscalatingExec() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Connect), hostNamespaces: true}
}

// NewDenyExecOnPrivileged returns the DenyExecOnPrivileged plugin.
func NewDenyExecOnPrivileged() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Connect)}
}

// SetExternalKubeClientSet receives the server's loopback client.
func (p *Plugin) SetExternalKubeClientSet(client kubernetes.Interface) { p.client = client }

// ValidateInitialization fails when the server gave no client.
func (p *Plugin) ValidateInitialization() error {
	if p.client == nil {
		return fmt.Errorf("missing client")
	}
	return nil
}

var podsResource = api.Resource("pods")

// Validate refuses the connection when the target pod is forbidden, and when the pod cannot
// be read: this check fails closed.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != podsResource {
		return nil
	}
	if sub := a.GetSubresource(); sub != "exec" && sub != "attach" {
		return nil
	}
	// A live read, not an informer's cache: a pod deleted and recreated privileged a moment
	// ago must not slip through on stale data.
	pod, err := p.client.CoreV1().Pods(a.GetNamespace()).Get(ctx, a.GetName(), metav1.GetOptions{})
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("cannot verify the target pod, so refusing the connection: %w", err))
	}
	if reason := p.Decide(pod); reason != nil {
		return admission.NewForbidden(a, reason)
	}
	return nil
}

// Decide returns why the policy forbids exec and attach into pod, or nil. The first
// matching condition wins: host network, host PID, host IPC, then any privileged init,
// regular or ephemeral container, whichever container the request targets.
func (p *Plugin) Decide(pod *corev1.Pod) error {
	if p.hostNamespaces {
		switch {
		case pod.Spec.HostNetwork:
			return ErrHostNetwork
		case pod.Spec.HostPID:
			return ErrHostPID
		case pod.Spec.HostIPC:
			return ErrHostIPC
		}
	}
	for i := range pod.Spec.InitContainers {
		if isPrivileged(pod.Spec.InitContainers[i].SecurityContext) {
			return ErrPrivileged
		}
	}
	for i := range pod.Spec.Containers {
		if isPrivileged(pod.Spec.Containers[i].SecurityContext) {
			return ErrPrivileged
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if isPrivileged(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return ErrPrivileged
		}
	}
	return nil
}

func isPrivileged(sc *corev1.SecurityContext) bool {
	return sc != nil && sc.Privileged != nil && *sc.Privileged
}
