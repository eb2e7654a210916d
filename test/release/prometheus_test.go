package release

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initializers"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/podpreset"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/podsecuritypolicy"
)

const (
	alertingRules     = "build/deploy/prometheus/portcullis-alerts.yaml"
	alertingRulesTest = "build/deploy/prometheus/portcullis-alerts.test.yaml"
)

// TestAlertingRules checks the shipped alerting rules with Prometheus's own tool, runs their
// unit tests, and holds the readiness checks they watch to the plugins' own check names.
func TestAlertingRules(t *testing.T) {
	promtool := lookTool(t, "promtool", "prometheus")
	runTool(t, promtool, "check", "rules", repoFile(t, alertingRules))
	runTool(t, promtool, "test", "rules", repoFile(t, alertingRulesTest))

	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	data, err := os.ReadFile(repoFile(t, alertingRules))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	want := []string{podpreset.ReadinessCheckName, podsecuritypolicy.ReadinessCheckName, initializers.ReadinessCheckName}
	slices.Sort(want)
	found := false
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			m := regexp.MustCompile(`kubernetes_healthcheck\{[^}]*name=~"([^"]*)"`).FindStringSubmatch(r.Expr)
			if m == nil {
				continue
			}
			found = true
			got := regexp.MustCompile(`\|`).Split(m[1], -1)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s watches the readiness checks %q; the plugins register %q", r.Alert, got, want)
			}
		}
	}
	if !found {
		t.Errorf("%s has no alert on our plugins' readiness checks", alertingRules)
	}
}
