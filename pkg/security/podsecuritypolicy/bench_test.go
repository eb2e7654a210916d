package podsecuritypolicy

import (
	"testing"

	api "k8s.io/kubernetes/pkg/apis/core"
)

// compliantTypicalPod is restrictedPod as it looks after the shipped restricted example
// defaulted it, i.e. what a policy sees again on every re-admission and on every policy it
// tries.
func compliantTypicalPod(b testing.TB) (*api.Pod, Provider) {
	p := newProvider(b, shippedExample(b, "restricted"))
	pod := restrictedPod()
	if err := p.MutatePod(pod); err != nil {
		b.Fatal(err)
	}
	if errs := p.ValidatePod(pod); len(errs) > 0 {
		b.Fatal(errs)
	}
	return pod, p
}

// BenchmarkProviderValidate measures MutatePod+ValidatePod on a pod that already complies
// with the restricted example; the goal is zero allocations.
func BenchmarkProviderValidate(b *testing.B) {
	pod, p := compliantTypicalPod(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.MutatePod(pod); err != nil {
			b.Fatal(err)
		}
		if errs := p.ValidatePod(pod); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkProviderMutateFresh defaults a pod whose container sets nothing (a fresh copy each
// time, whose cost is included) under the shipped restricted example: the allocations are
// the defaults (allowPrivilegeEscalation, the dropped capabilities).
func BenchmarkProviderMutateFresh(b *testing.B) {
	p := newProvider(b, shippedExample(b, "restricted"))
	orig := restrictedPod()
	orig.Spec.Containers[0].SecurityContext = nil
	b.ReportAllocs()
	for b.Loop() {
		pod := orig.DeepCopy()
		if err := p.MutatePod(pod); err != nil {
			b.Fatal(err)
		}
		if errs := p.ValidatePod(pod); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkNewSimpleProvider: 1.24's plugin built providers per request.
func BenchmarkNewSimpleProvider(b *testing.B) {
	psp := shippedExample(b, "restricted")
	f := NewSimpleStrategyFactory()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewSimpleProvider(psp, "default", f); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCompliantPodAllocatesNothing(t *testing.T) {
	pod, p := compliantTypicalPod(t)
	n := testing.AllocsPerRun(100, func() {
		_ = p.MutatePod(pod)
		_ = p.ValidatePod(pod)
	})
	if n != 0 {
		t.Fatalf("MutatePod+ValidatePod of a compliant pod: %v allocations, want 0", n)
	}
}
