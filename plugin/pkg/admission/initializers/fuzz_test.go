package initializers

import (
	"context"
	"slices"
	"testing"

	api "k8s.io/kubernetes/pkg/apis/core"
)

// FuzzAdmitUpdate updates a pending pod with any pending list, result and gates: Admit never
// panics, and an update it lets through leaves the label exactly where the list is, and a
// gate of every initializer still pending that had one.
func FuzzAdmitUpdate(f *testing.F) {
	for _, seed := range []struct{ oldPending, newPending, result, gate string }{
		{"a.example.com,b.example.com", "b.example.com", "", "a.example.com"},
		{"a.example.com", "", "", ""},
		{"a.example.com", "a.example.com,,", "", "b.example.com"},
		{"", "x", "{\"code\":403}", ""},
		{"a.example.com,b.example.com", "b.example.com, a.example.com", "not json", "b.example.com"},
	} {
		f.Add(seed.oldPending, seed.newPending, seed.result, seed.gate)
	}
	f.Fuzz(func(t *testing.T, oldPending, newPending, result, gate string) {
		p, _ := newPlugin(t)
		old := pendingPod(oldPending)
		if current, errs := parsePending(oldPending); len(errs) == 0 {
			for _, name := range current {
				old.Spec.SchedulingGates = append(old.Spec.SchedulingGates, api.PodSchedulingGate{Name: name})
			}
		}
		updated := pendingPod(newPending)
		updated.Spec.SchedulingGates = slices.Clone(old.Spec.SchedulingGates)
		if gate != "" {
			updated.Spec.SchedulingGates = slices.DeleteFunc(updated.Spec.SchedulingGates, func(g api.PodSchedulingGate) bool { return g.Name == gate })
		}
		if result != "" {
			updated.Annotations[ResultAnnotation] = result
		}
		if err := p.Admit(context.Background(), updateAttributes(updated, old, initializerUser, true), nil); err != nil {
			return
		}
		value, annotated := updated.Annotations[PendingAnnotation]
		if _, labelled := updated.Labels[UninitializedLabel]; labelled != annotated || (annotated && value == "") {
			t.Fatalf("annotation %q (%v), label %v", value, annotated, labelled)
		}
		pending, _ := parsePending(value)
		for _, name := range pending {
			if slices.ContainsFunc(old.Spec.SchedulingGates, func(g api.PodSchedulingGate) bool { return g.Name == name }) &&
				!slices.ContainsFunc(updated.Spec.SchedulingGates, func(g api.PodSchedulingGate) bool { return g.Name == name }) {
				t.Fatalf("the gate of %s, still pending, was removed", name)
			}
		}
	})
}
