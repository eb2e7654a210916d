// Package kubecompat adapts to what moved in upstream's internal API between the supported
// Kubernetes minors, one file a change, each named for the minors it serves (x_upto_1_N.go,
// x_from_1_N.go, x_1_N.go), its build line derived from the name and releases/minors by
// hack/buildtags (an older minor's tag is kube1.N; the newest minor is the build with none).
package kubecompat

// HostNamespaces are the host namespaces a pod shares.
type HostNamespaces struct {
	Network, PID, IPC bool
}
