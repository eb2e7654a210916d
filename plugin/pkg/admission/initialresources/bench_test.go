package initialresources

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// BenchmarkAdmit measures a pod create: ignored (every container sets its requests), checked
// with the image's estimate cached (goal ≤ 5 µs beyond the pod's copy, which each operation
// makes since the plugin changes the pod), and a miss on a stuck source, which the miss wait
// bounds (goal: the wait, 1 ms, and no more than half a millisecond beyond).
func BenchmarkAdmit(b *testing.B) {
	typical := func() *api.Pod {
		return &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"app": "web"}},
			Spec: api.PodSpec{Containers: []api.Container{container("web", "nginx:1.25", nil, nil)}}}
	}
	attrs := func(pod *api.Pod) admission.Attributes {
		return admission.NewAttributesRecord(pod, nil, api.Kind("Pod").WithVersion("v1"), "ns", "web",
			api.Resource("pods").WithVersion("v1"), "", admission.Create, nil, false, nil)
	}
	ctx := context.Background()
	b.Run("pod-deep-copy-alone", func(b *testing.B) {
		template := typical()
		b.ReportAllocs()
		for b.Loop() {
			if template.DeepCopy() == nil {
				b.Fatal("DeepCopy returned nil")
			}
		}
	})
	b.Run("ignored-requests-set", func(b *testing.B) {
		p := newTestPlugin(b, historyOf(map[string][2]int{"nginx:1.25": {250, 64 << 20}}), nil)
		pod := typical()
		pod.Spec.Containers[0].Resources.Requests = quantities("100m", "128Mi")
		a := attrs(pod)
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Admit(ctx, a, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("checked-cached", func(b *testing.B) {
		p := newTestPlugin(b, historyOf(map[string][2]int{"nginx:1.25": {250, 64 << 20}}), nil)
		warm := typical()
		if err := p.Admit(ctx, attrs(warm), nil); err != nil || warm.Annotations[Annotation] == "" {
			b.Fatalf("the estimate was not cached: %v, %v", err, warm.Annotations)
		}
		template := typical()
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Admit(ctx, attrs(template.DeepCopy()), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("other-miss-wait=1ms", func(b *testing.B) {
		stuck := historyOf(nil)
		stuck.release = make(chan struct{})
		defer close(stuck.release)
		p := newTestPlugin(b, stuck, func(c *portcullisapi.InitialResourcesConfiguration) {
			c.MissWait = &metav1.Duration{Duration: time.Millisecond}
		})
		template := typical()
		b.ReportAllocs()
		for b.Loop() {
			pod := template.DeepCopy()
			if err := p.Admit(ctx, attrs(pod), nil); err != nil || pod.Annotations != nil {
				b.Fatalf("a stuck source: %v, %v", err, pod.Annotations)
			}
		}
	})
}
