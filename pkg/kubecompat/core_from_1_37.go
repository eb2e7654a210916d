//go:build !kube1.35 && !kube1.36

package kubecompat

import api "k8s.io/kubernetes/pkg/apis/core"

// Kubernetes 1.37 moved the host namespaces of the internal PodSpec out of its
// SecurityContext onto the spec, as the versioned API has always had them.

// PodHostNamespaces returns the host namespaces spec shares.
func PodHostNamespaces(spec *api.PodSpec) HostNamespaces {
	return HostNamespaces{Network: spec.HostNetwork, PID: spec.HostPID, IPC: spec.HostIPC}
}

// SetPodHostNamespaces sets the host namespaces spec shares.
func SetPodHostNamespaces(spec *api.PodSpec, h HostNamespaces) {
	spec.HostNetwork, spec.HostPID, spec.HostIPC = h.Network, h.PID, h.IPC
}

// ServiceAccountTokenProjection projects a token to path, valid for expirationSeconds.
// Kubernetes 1.37 made the internal ExpirationSeconds a pointer.
func ServiceAccountTokenProjection(path string, expirationSeconds int64) *api.ServiceAccountTokenProjection {
	return &api.ServiceAccountTokenProjection{Path: path, ExpirationSeconds: &expirationSeconds}
}
