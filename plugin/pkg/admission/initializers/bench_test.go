package initializers

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// BenchmarkAdmit measures what every create and update pays with the plugin on: an update of
// an object never initialized and a create no configuration matches (ignored), and a pod
// created pending three initializers, gated (checked), beyond the pod's own copy.
func BenchmarkAdmit(b *testing.B) {
	p, _ := newPlugin(b, configurations()...)
	ctx := context.Background()

	b.Run("ignored-update-of-an-initialized-pod", func(b *testing.B) {
		old, updated := pod(nil), pod(func(p *api.Pod) { p.Labels = map[string]string{"app": "web"} })
		a := updateAttributes(updated, old, ordinaryUser, false)
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Admit(ctx, a, nil); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("ignored-create-no-configuration-matches", func(b *testing.B) {
		secret := &api.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}}
		a := createAttributes(secret, secretsResource, "Secret", ordinaryUser)
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Admit(ctx, a, nil); err != nil {
				b.Fatal(err)
			}
		}
	})

	template := pod(nil)
	b.Run("pod-deep-copy-alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = template.DeepCopy()
		}
	})

	b.Run("checked-create-pod-3-initializers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj := template.DeepCopy()
			a := admission.NewAttributesRecord(obj, nil, podsResource.GroupVersion().WithKind("Pod"), obj.Namespace, obj.Name, podsResource, "",
				admission.Create, &metav1.CreateOptions{}, false, ordinaryUser)
			if err := p.Admit(ctx, a, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
