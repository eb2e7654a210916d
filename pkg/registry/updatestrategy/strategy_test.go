package updatestrategy

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/registry/rest"
)

// upstream stands in for the rest of a strategy; the embedded answer's methods win.
type upstream struct{ rest.RESTUpdateStrategy }

type nameResourceVersionStrategy struct {
	upstream
	NameResourceVersion
}

type replaceStrategy struct {
	upstream
	Replace
}

func TestAnswers(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name                          string
		strategy                      rest.RESTUpdateStrategy
		createOnUpdate, unconditional bool
	}{
		{"NameResourceVersion", nameResourceVersionStrategy{}, false, false},
		{"Replace", replaceStrategy{}, false, true},
	} {
		if got := CreateOnUpdate(ctx, tc.strategy); got != tc.createOnUpdate {
			t.Errorf("%s: AllowCreateOnUpdate = %t, want %t", tc.name, got, tc.createOnUpdate)
		}
		if got := UnconditionalUpdate(ctx, tc.strategy); got != tc.unconditional {
			t.Errorf("%s: AllowUnconditionalUpdate = %t, want %t", tc.name, got, tc.unconditional)
		}
	}
}
