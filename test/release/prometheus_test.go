package release

import (
	"os"
	"regexp"
	"slices"
	"strings"
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

	rules := readAlertingRules(t)
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

// alertingRulesFile is what the tests read of the shipped alerting rules.
type alertingRulesFile struct {
	Groups []struct {
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func readAlertingRules(t *testing.T) alertingRulesFile {
	t.Helper()
	data, err := os.ReadFile(repoFile(t, alertingRules))
	if err != nil {
		t.Fatal(err)
	}
	var rules alertingRulesFile
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	return rules
}

// runbookURL is where an alert's runbook is: the docs of the release the rules ship with,
// which say what that release does, not what main says today.
var runbookURL = regexp.MustCompile(`^https://github\.com/portcullis-k8s/portcullis/blob/([^/]+)/(docs/[^#]+)#(.+)$`)

// TestAlertRunbooks holds every alert's runbook_url to this release's docs (the release's
// deploy kit renames the release, as it renames its image), to a page that exists, and to an
// anchor the page has.
func TestAlertRunbooks(t *testing.T) {
	rules := readAlertingRules(t)
	version, err := os.ReadFile(repoFile(t, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	release := strings.TrimSpace(string(version))
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			url := r.Annotations["runbook_url"]
			m := runbookURL.FindStringSubmatch(url)
			if m == nil {
				t.Errorf("%s: runbook_url %q is not a page of docs/ on GitHub", r.Alert, url)
				continue
			}
			if m[1] != release {
				t.Errorf("%s: runbook_url %q names %s, not this release's docs (%s)", r.Alert, url, m[1], release)
			}
			page, err := os.ReadFile(repoFile(t, m[2]))
			if err != nil {
				t.Errorf("%s: runbook_url %q: %v", r.Alert, url, err)
				continue
			}
			if !hasAnchor(string(page), m[3]) {
				t.Errorf("%s: runbook_url %q: %s has no anchor %q", r.Alert, url, m[2], m[3])
			}
		}
	}
}

// hasAnchor reports whether a Markdown page has an anchor: an <a id>, or a heading whose
// GitHub slug it is.
func hasAnchor(page, anchor string) bool {
	if strings.Contains(page, `<a id="`+anchor+`"></a>`) {
		return true
	}
	for _, line := range strings.Split(page, "\n") {
		heading, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		slug := regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(strings.ToLower(heading), "")
		if strings.ReplaceAll(slug, " ", "-") == anchor {
			return true
		}
	}
	return false
}
