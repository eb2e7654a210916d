package initializerconfiguration

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration"
)

func TestGeneration(t *testing.T) {
	ctx := context.Background()
	ic := &admissionregistration.InitializerConfiguration{
		ObjectMeta:   metav1.ObjectMeta{Name: "c", Generation: 7},
		Initializers: []admissionregistration.Initializer{{Name: "a.example.com"}},
	}
	Strategy.PrepareForCreate(ctx, ic)
	if ic.Generation != 1 {
		t.Fatalf("generation %d after create, want 1", ic.Generation)
	}
	same := ic.DeepCopy()
	same.Labels = map[string]string{"k": "v"}
	Strategy.PrepareForUpdate(ctx, same, ic)
	if same.Generation != 1 {
		t.Errorf("generation %d after a metadata change, want 1", same.Generation)
	}
	changed := ic.DeepCopy()
	changed.Initializers = append(changed.Initializers, admissionregistration.Initializer{Name: "b.example.com"})
	Strategy.PrepareForUpdate(ctx, changed, ic)
	if changed.Generation != 2 {
		t.Errorf("generation %d after the initializers changed, want 2", changed.Generation)
	}
	forged := ic.DeepCopy()
	forged.Generation = 40
	Strategy.PrepareForUpdate(ctx, forged, ic)
	if forged.Generation != 1 {
		t.Errorf("a client set the generation to %d", forged.Generation)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	ic := &admissionregistration.InitializerConfiguration{
		ObjectMeta:   metav1.ObjectMeta{Name: "c"},
		Initializers: []admissionregistration.Initializer{{Name: "example.com"}},
	}
	errs := Strategy.Validate(context.Background(), ic)
	if len(errs) != 1 || errs[0].Field != "initializers[0].name" {
		t.Errorf("errors %v, want one naming initializers[0].name", errs)
	}
}
