package admission

import (
	"errors"
	"net/http"
	"testing"

	genericadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/server/healthz"
)

type plainPlugin struct{ *genericadmission.Handler }

type readyPlugin struct {
	*genericadmission.Handler
	check string
}

func (p readyPlugin) ReadinessCheck() healthz.HealthChecker {
	return healthz.NamedCheck(p.check, func(*http.Request) error { return errors.New("not yet") })
}

func TestReadinessChecksCollectsFromPlugins(t *testing.T) {
	var r ReadinessChecks
	decorators := genericadmission.Decorators{&r}
	plugins := []genericadmission.Interface{
		plainPlugin{},
		readyPlugin{check: "b-check"},
		readyPlugin{check: "a-check"},
		readyPlugin{check: "b-check"}, // the same plugin's check, seen twice
	}
	for _, p := range plugins {
		if got := decorators.Decorate(p, "name"); got != p {
			t.Errorf("the decorator wrapped %T; it must return plugins unchanged", p)
		}
	}
	var names []string
	for _, c := range r.Checks() {
		names = append(names, c.Name())
		if c.Check(nil) == nil {
			t.Errorf("check %s lost the plugin's answer", c.Name())
		}
	}
	if len(names) != 2 || names[0] != "a-check" || names[1] != "b-check" {
		t.Errorf("checks = %v, want [a-check b-check]", names)
	}
}
