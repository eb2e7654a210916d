package webhookconfigurationguard

import (
	"reflect"
	"slices"
	"testing"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// TestChecksAreTheConfigurationsFields: the checks the plugin runs are GuardChecks' fields,
// every one, under the names its findings and messages use.
func TestChecksAreTheConfigurationsFields(t *testing.T) {
	var checks portcullisapi.GuardChecks
	var names []checkID
	for _, m := range checkModes(&checks) {
		names = append(names, m.check)
	}
	want := []checkID{checkSystemNamespaces, checkReviewResources, checkSelfIntercept, checkTimeout, checkCatchAll, checkChain}
	if !slices.Equal(names, want) {
		t.Errorf("checks %q, want the plugin's %q", names, want)
	}
	if n := reflect.TypeFor[portcullisapi.GuardChecks]().NumField(); n != len(names) {
		t.Errorf("GuardChecks has %d fields, GuardChecks.Fields lists %d", n, len(names))
	}
}
