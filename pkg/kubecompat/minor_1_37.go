//go:build !kube1.35 && !kube1.36

package kubecompat

// Minor is the Kubernetes minor this build serves.
const Minor = "1.37"
