//go:build kube1.35

package webhook

import "testing"

// Kubernetes 1.35 serves MutatingAdmissionPolicy only as v1beta1, behind a feature gate:
// testReinvocation has no case with a policy.
var reinvocationByPolicyCases []struct {
	name string
	run  func(*testing.T, *env)
}
