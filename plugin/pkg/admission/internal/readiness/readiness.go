// Package readiness is what the plugins of ours that load state in the background (presets,
// policies) share: background work that stops when the server has drained, a bounded wait
// for the state on the request path, and the /readyz check that makes that wait rare.
package readiness

import (
	"context"
	"errors"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/healthz"
)

// DefaultTimeout is how long a request waits for a plugin to become ready before it is
// refused, as upstream's admission.Handler waits.
const DefaultTimeout = 10 * time.Second

// UntilDrained returns a context that ends when drained is closed: the server's drained
// notification, after which a plugin's background work has no one to serve.
func UntilDrained(drained <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-drained
		cancel()
	}()
	return ctx
}

// Wait reports whether ready becomes true within timeout, never waiting past ctx.
func Wait(ctx context.Context, ready func() bool, timeout time.Duration) bool {
	if ready() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, false, func(context.Context) (bool, error) {
		return ready(), nil
	}) == nil
}

// Check returns a /readyz check named name that fails with notReady until ready is true.
func Check(name, notReady string, ready func() bool) healthz.HealthChecker {
	return healthz.NamedCheck(name, func(*http.Request) error {
		if !ready() {
			return errors.New(notReady)
		}
		return nil
	})
}
