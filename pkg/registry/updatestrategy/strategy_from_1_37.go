//go:build !kube1.35 && !kube1.36

package updatestrategy

import (
	"context"

	"k8s.io/apiserver/pkg/registry/rest"
)

// Kubernetes 1.37 passes the request's context.

func (NameResourceVersion) AllowCreateOnUpdate(context.Context) bool      { return false }
func (NameResourceVersion) AllowUnconditionalUpdate(context.Context) bool { return false }
func (Replace) AllowCreateOnUpdate(context.Context) bool                  { return false }
func (Replace) AllowUnconditionalUpdate(context.Context) bool             { return true }

// CreateOnUpdate asks s, as the minor built asks it.
func CreateOnUpdate(ctx context.Context, s rest.RESTUpdateStrategy) bool {
	return s.AllowCreateOnUpdate(ctx)
}

// UnconditionalUpdate asks s, as the minor built asks it.
func UnconditionalUpdate(ctx context.Context, s rest.RESTUpdateStrategy) bool {
	return s.AllowUnconditionalUpdate(ctx)
}
