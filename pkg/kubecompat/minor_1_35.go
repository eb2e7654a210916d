//go:build kube1.35

package kubecompat

// Minor is the Kubernetes minor this build serves.
const Minor = "1.35"
