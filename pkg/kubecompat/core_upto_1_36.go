//go:build kube1.35 || kube1.36

package kubecompat

import api "k8s.io/kubernetes/pkg/apis/core"

// Before 1.37 the internal PodSpec holds the host namespaces in its SecurityContext.

// PodHostNamespaces returns the host namespaces spec shares.
func PodHostNamespaces(spec *api.PodSpec) HostNamespaces {
	if spec.SecurityContext == nil {
		return HostNamespaces{}
	}
	sc := spec.SecurityContext
	return HostNamespaces{Network: sc.HostNetwork, PID: sc.HostPID, IPC: sc.HostIPC}
}

// SetPodHostNamespaces sets the host namespaces spec shares.
func SetPodHostNamespaces(spec *api.PodSpec, h HostNamespaces) {
	if spec.SecurityContext == nil {
		spec.SecurityContext = &api.PodSecurityContext{}
	}
	sc := spec.SecurityContext
	sc.HostNetwork, sc.HostPID, sc.HostIPC = h.Network, h.PID, h.IPC
}

// ServiceAccountTokenProjection projects a token to path, valid for expirationSeconds.
func ServiceAccountTokenProjection(path string, expirationSeconds int64) *api.ServiceAccountTokenProjection {
	return &api.ServiceAccountTokenProjection{Path: path, ExpirationSeconds: expirationSeconds}
}
