package admission

import (
	"errors"
	"slices"
	"sync"

	genericadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/rest"
)

// WantsLoopbackClientConfig is implemented by a plugin of ours that calls the server as the
// user of the request it admits (impersonating them), where the loopback clients upstream's
// initializers give call it as the server: the Initializers plugin deletes an object whose
// initialization failed as the user who set the result.
type WantsLoopbackClientConfig interface {
	SetLoopbackClientConfig(*rest.Config) error
}

// LoopbackClientConfigs is an admission decorator that collects the plugins that want the
// server's loopback client configuration, as the server builds its chain; Set gives it to
// them once the server's configuration holds it, before the server serves. Put it before
// the decorators that wrap plugins, so it sees the plugins themselves.
type LoopbackClientConfigs struct {
	mu      sync.Mutex
	plugins []WantsLoopbackClientConfig
}

var _ genericadmission.Decorator = &LoopbackClientConfigs{}

// Decorate records the plugin if it wants the loopback configuration, and returns it
// unchanged.
func (l *LoopbackClientConfigs) Decorate(handler genericadmission.Interface, _ string) genericadmission.Interface {
	if wants, ok := handler.(WantsLoopbackClientConfig); ok {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !slices.Contains(l.plugins, wants) {
			l.plugins = append(l.plugins, wants)
		}
	}
	return handler
}

// Set gives config to every plugin collected.
func (l *LoopbackClientConfigs) Set(config *rest.Config) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, plugin := range l.plugins {
		errs = append(errs, plugin.SetLoopbackClientConfig(config))
	}
	return errors.Join(errs...)
}
