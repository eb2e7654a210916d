//go:build kube1.35 || kube1.36

package updatestrategy

import (
	"context"

	"k8s.io/apiserver/pkg/registry/rest"
)

// Kubernetes 1.35 and 1.36 pass no context.

func (NameResourceVersion) AllowCreateOnUpdate() bool      { return false }
func (NameResourceVersion) AllowUnconditionalUpdate() bool { return false }
func (Replace) AllowCreateOnUpdate() bool                  { return false }
func (Replace) AllowUnconditionalUpdate() bool             { return true }

// CreateOnUpdate asks s, as the minor built asks it.
func CreateOnUpdate(_ context.Context, s rest.RESTUpdateStrategy) bool {
	return s.AllowCreateOnUpdate()
}

// UnconditionalUpdate asks s, as the minor built asks it.
func UnconditionalUpdate(_ context.Context, s rest.RESTUpdateStrategy) bool {
	return s.AllowUnconditionalUpdate()
}
