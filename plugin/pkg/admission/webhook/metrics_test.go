package webhook

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestResourceLabelsAreBounded(t *testing.T) {
	m := NewMetrics()
	for i := 0; i < maxResourceLabels; i++ {
		gr := schema.GroupResource{Group: "example.com", Resource: fmt.Sprintf("r%d", i)}
		if got := m.resourceLabel(gr); got != gr.String() {
			t.Fatalf("resource %d labelled %q, want %q", i, got, gr.String())
		}
	}
	if got := m.resourceLabel(schema.GroupResource{Resource: "one-too-many"}); got != otherResource {
		t.Errorf("resource beyond the bound labelled %q, want %q", got, otherResource)
	}
	if got := m.resourceLabel(schema.GroupResource{Group: "example.com", Resource: "r0"}); got != "r0.example.com" {
		t.Errorf("a known resource after the bound labelled %q, want its own name", got)
	}
}
