package webhookconfigurationguard

import (
	"fmt"
	"io"
	"strings"

	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// LoadConfiguration reads the plugin's configuration from the admission config file's
// reader, defaulted and validated (pkg/admission/portcullisconfig). A nil or empty reader
// (no configuration) gives the defaults.
func LoadConfiguration(r io.Reader) (*portcullisapi.WebhookConfigurationGuardConfiguration, error) {
	cfg, err := portcullisconfig.LoadWebhookConfigurationGuard(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PluginName, err)
	}
	return cfg, nil
}

// CheckConfiguration reads a configuration as the plugin's factory does: the command runs it
// before the server starts.
func CheckConfiguration(r io.Reader) error {
	_, err := LoadConfiguration(r)
	return err
}

// checkID names a check as its field in the configuration's checks.
type checkID string

const (
	checkSystemNamespaces checkID = "systemNamespaces"
	checkReviewResources  checkID = "reviewResources"
	checkSelfIntercept    checkID = "selfIntercept"
	checkTimeout          checkID = "timeout"
	checkCatchAll         checkID = "catchAll"
	checkChain            checkID = "chain"
)

type checkMode struct {
	check checkID
	mode  *portcullisapi.GuardCheckMode
}

// checkModes lists every check with a pointer to its mode, in the order findings are
// reported.
func checkModes(c *portcullisapi.GuardChecks) []checkMode {
	fields := c.Fields()
	modes := make([]checkMode, len(fields))
	for i, f := range fields {
		modes[i] = checkMode{checkID(f.Name), f.Mode}
	}
	return modes
}

// ExampleConfig is a sample configuration for --admission-control-config-file: every check
// at its default mode, spelled out.
const ExampleConfig = `apiVersion: admission.portcullis.io/v1alpha1
kind: WebhookConfigurationGuardConfiguration
checks:
  systemNamespaces: Warn
  reviewResources: Warn
  selfIntercept: Warn
  timeout: Warn
  catchAll: Warn
  chain: Warn
timeoutThresholdSeconds: 5
requestBudgetSeconds: 34
`

// RefusesWith says what the guard refuses that stock admits under the configuration read
// from r: webhook configurations that fail a check at Deny ("" when no check is at Deny).
// Preflight lists it.
func RefusesWith(r io.Reader) (string, error) {
	cfg, err := LoadConfiguration(r)
	if err != nil {
		return "", err
	}
	var denied []string
	for _, m := range checkModes(&cfg.Checks) {
		if *m.mode == portcullisapi.GuardCheckModeDeny {
			denied = append(denied, string(m.check))
		}
	}
	if len(denied) == 0 {
		return "", nil
	}
	return fmt.Sprintf("webhook configurations that fail its checks at Deny (%s)", strings.Join(denied, ", ")), nil
}
