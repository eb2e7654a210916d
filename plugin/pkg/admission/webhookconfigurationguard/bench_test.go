package webhookconfigurationguard

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// BenchmarkValidate measures a write of a webhook configuration when 200 exist (goal
// ≤ 10 ms: it runs only on those rare writes), and a request of any other resource, which
// every request of the cluster pays (goal ≤ 1 µs, no allocation).
func BenchmarkValidate(b *testing.B) {
	groups := []string{"", "apps", "batch", "networking.k8s.io", "example.com"}
	resources := []string{"pods", "deployments", "jobs", "ingresses", "widgets", "configmaps", "services"}
	var stored []runtime.Object
	for i := 0; i < 200; i++ {
		if i%2 == 0 {
			m := sidecarInjector()
			m.Name = fmt.Sprintf("m%d", i)
			m.Webhooks[0].Rules[0].Rule.APIGroups = []string{groups[i%len(groups)]}
			m.Webhooks[0].Rules[0].Rule.Resources = []string{resources[i%len(resources)], resources[(i+3)%len(resources)]}
			stored = append(stored, m)
		} else {
			v := replicasValidator()
			v.Name = fmt.Sprintf("v%d", i)
			v.Webhooks[0].Rules[0].Rule.APIGroups = []string{groups[i%len(groups)]}
			stored = append(stored, v)
		}
	}
	p := newPlugin(b, "", stored...)
	ctx := context.Background()
	b.Run("checked-write-200-configurations", func(b *testing.B) {
		a := attrs(sidecarInjector())
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Validate(ctx, a, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ignored-pod", func(b *testing.B) {
		a := admission.NewAttributesRecord(&api.Pod{}, nil, api.Kind("Pod").WithVersion("v1"), "ns", "p",
			api.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Validate(ctx, a, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
