// Package kubecompat adapts to what moved in upstream's internal API between the supported
// Kubernetes minors, one file a change, each built for the minors it serves (build tags
// kube1.35, kube1.36; no tag: the newest minor, 1.37).
package kubecompat

// HostNamespaces are the host namespaces a pod shares.
type HostNamespaces struct {
	Network, PID, IPC bool
}
