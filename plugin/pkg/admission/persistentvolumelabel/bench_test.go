package persistentvolumelabel

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// BenchmarkAdmit measures a pod create (ignored: goal ≤ 1 µs, 0 allocations) and the
// create of a CSI PV whose node affinity names a node among 1,000 in the informer, labelled
// by the Nodes resolver after the CSITopology resolver found nothing (goal ≤ 20 µs; each
// operation includes its copy of the PV, which the plugin changes).
func BenchmarkAdmit(b *testing.B) {
	ctx := context.Background()
	objects := make([]runtime.Object, 0, 1001)
	for i := range 1000 {
		name := fmt.Sprintf("node-%04d", i)
		objects = append(objects, node(name, map[string]string{
			gaZone: fmt.Sprintf("zone-%d", i%3), gaRegion: "region-1", corev1.LabelHostname: name,
			"topology.hostpath.csi/node": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"node.kubernetes.io/instance-type": "m5.large",
		}))
	}
	// The host-path driver's key, registered (one CSINode is enough for the index).
	objects = append(objects, csiNode("node-0500", "hostpath.csi.k8s.io", "topology.hostpath.csi/node"))
	p := newPlugin(b, "", objects...)
	b.Run("ignored-a-pod", func(b *testing.B) {
		a := admission.NewAttributesRecord(&api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}, nil,
			api.Kind("Pod").WithVersion("v1"), "ns", "web", api.Resource("pods").WithVersion("v1"), "", admission.Create, nil, false, nil)
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Admit(ctx, a, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("checked-labelled-nodes=1000", func(b *testing.B) {
		template := newPV(csi("hostpath.csi.k8s.io", "h"), withTerms(term(in("topology.hostpath.csi/node", "node-0500"))))
		b.ReportAllocs()
		for b.Loop() {
			pv := template.DeepCopy()
			if err := p.Admit(ctx, createAttributes(pv), nil); err != nil {
				b.Fatal(err)
			}
			if pv.Labels[gaZone] != "zone-2" {
				b.Fatalf("labels %v, want zone-2", pv.Labels)
			}
		}
	})
}
