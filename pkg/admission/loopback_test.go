package admission

import (
	"errors"
	"testing"

	genericadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/rest"
)

type loopbackPlugin struct {
	*genericadmission.Handler
	got []*rest.Config
	err error
}

func (p *loopbackPlugin) SetLoopbackClientConfig(c *rest.Config) error {
	p.got = append(p.got, c)
	return p.err
}

func TestLoopbackClientConfigsReachEveryPluginOnce(t *testing.T) {
	var l LoopbackClientConfigs
	decorators := genericadmission.Decorators{&l}
	wants, failing := &loopbackPlugin{}, &loopbackPlugin{err: errors.New("no transport")}
	for _, p := range []genericadmission.Interface{plainPlugin{}, wants, failing, wants /* the same plugin, seen twice */} {
		if got := decorators.Decorate(p, "name"); got != p {
			t.Errorf("the decorator wrapped %T; it must return plugins unchanged", p)
		}
	}
	config := &rest.Config{Host: "https://127.0.0.1:6443"}
	if err := l.Set(config); err == nil || err.Error() != "no transport" {
		t.Errorf("Set = %v, want the failing plugin's error", err)
	}
	for _, p := range []*loopbackPlugin{wants, failing} {
		if len(p.got) != 1 || p.got[0] != config {
			t.Errorf("a plugin got %v, want the configuration once", p.got)
		}
	}
}
