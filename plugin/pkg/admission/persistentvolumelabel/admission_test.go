package persistentvolumelabel

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	admissiontesting "k8s.io/apiserver/pkg/admission/testing"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metricstestutil "k8s.io/component-base/metrics/testutil"
	persistentvolume "k8s.io/component-helpers/storage/volume"
	api "k8s.io/kubernetes/pkg/apis/core"
)

const (
	gaZone     = corev1.LabelTopologyZone
	gaRegion   = corev1.LabelTopologyRegion
	betaZone   = corev1.LabelFailureDomainBetaZone
	betaRegion = corev1.LabelFailureDomainBetaRegion
)

// newPlugin builds the plugin from a configuration's YAML body (the kind's header added),
// with objects (Nodes, CSINodes) in its informers.
func newPlugin(t testing.TB, config string, objects ...runtime.Object) *Plugin {
	t.Helper()
	cfg, err := LoadConfiguration(strings.NewReader("apiVersion: admission.portcullis.io/v1alpha1\nkind: PersistentVolumeLabelConfiguration\n" + config))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(objects...), 0)
	p.SetExternalKubeInformerFactory(factory)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if p.nodesSynced != nil {
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return p.nodesSynced(), nil
		}); err != nil {
			t.Fatalf("the Nodes were never counted: %v", err)
		}
	}
	return p
}

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// csiNode is the CSINode a driver's node plugin registers on node, with its topology keys.
func csiNode(node, driver string, topologyKeys ...string) *storagev1.CSINode {
	return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: driver, NodeID: node, TopologyKeys: topologyKeys}}}}
}

// cloudNode is a Node in zone and region (none when ""), labelled with the GA and beta keys.
func cloudNode(zone, region string) *corev1.Node {
	labels := map[string]string{gaZone: zone, betaZone: zone, corev1.LabelHostname: "node-" + zone}
	if region != "" {
		labels[gaRegion], labels[betaRegion] = region, region
	}
	return node("node-"+zone, labels)
}

func createAttributes(pv *api.PersistentVolume) admission.Attributes {
	return admission.NewAttributesRecord(pv, nil, api.Kind("PersistentVolume").WithVersion("v1"), "", pv.Name,
		api.Resource("persistentvolumes").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
}

// pv is a PersistentVolume of source, with labels, annotations and affinity terms.
type pvOption func(*api.PersistentVolume)

func newPV(source api.PersistentVolumeSource, opts ...pvOption) *api.PersistentVolume {
	pv := &api.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: api.PersistentVolumeSpec{PersistentVolumeSource: source}}
	for _, o := range opts {
		o(pv)
	}
	return pv
}

func withLabels(kv ...string) pvOption {
	return func(pv *api.PersistentVolume) {
		pv.Labels = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			pv.Labels[kv[i]] = kv[i+1]
		}
	}
}

func provisioned(pv *api.PersistentVolume) {
	pv.Annotations = map[string]string{persistentvolume.AnnDynamicallyProvisioned: "kubernetes.io/aws-ebs"}
}

func withTerms(terms ...api.NodeSelectorTerm) pvOption {
	return func(pv *api.PersistentVolume) {
		pv.Spec.NodeAffinity = &api.VolumeNodeAffinity{Required: &api.NodeSelector{NodeSelectorTerms: terms}}
	}
}

func term(reqs ...api.NodeSelectorRequirement) api.NodeSelectorTerm {
	return api.NodeSelectorTerm{MatchExpressions: reqs}
}

func in(key string, values ...string) api.NodeSelectorRequirement {
	return api.NodeSelectorRequirement{Key: key, Operator: api.NodeSelectorOpIn, Values: values}
}

func gcePD(name string) api.PersistentVolumeSource {
	return api.PersistentVolumeSource{GCEPersistentDisk: &api.GCEPersistentDiskVolumeSource{PDName: name}}
}

func ebs(id string) api.PersistentVolumeSource {
	return api.PersistentVolumeSource{AWSElasticBlockStore: &api.AWSElasticBlockStoreVolumeSource{VolumeID: id}}
}

func csi(driver, handle string) api.PersistentVolumeSource {
	return api.PersistentVolumeSource{CSI: &api.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}}
}

func cinder(id string) api.PersistentVolumeSource {
	return api.PersistentVolumeSource{Cinder: &api.CinderPersistentVolumeSource{VolumeID: id}}
}

var hostPath = api.PersistentVolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/data"}}

// The cluster's Nodes and CSINodes: two zones of one region (GA labels on zone-a's Nodes,
// beta only on zone-b's), a host-path CSI driver's topology key on each (registered in its
// CSINode), a pool label (rack) and the OS label, an unzoned node; an Azure node of a
// non-zonal region (the Azure Disk driver's zone key empty, a fault domain as the zone);
// and a Node in each zone the cloud volumes of the tests are in.
var clusterObjects = []runtime.Object{
	node("node-a1", map[string]string{gaZone: "zone-a", gaRegion: "region-1", corev1.LabelHostname: "node-a1", "topology.hostpath.csi/node": "node-a1", "kubernetes.io/os": "linux", "rack": "r1"}),
	node("node-a2", map[string]string{gaZone: "zone-a", gaRegion: "region-1", corev1.LabelHostname: "node-a2", "topology.hostpath.csi/node": "node-a2", "kubernetes.io/os": "linux", "rack": "r1"}),
	node("node-b1", map[string]string{betaZone: "zone-b", betaRegion: "region-1", corev1.LabelHostname: "node-b1", "topology.hostpath.csi/node": "node-b1", "kubernetes.io/os": "linux", "rack": "r2"}),
	node("edge-1", map[string]string{corev1.LabelHostname: "edge-1", "topology.hostpath.csi/node": "edge-1"}),
	node("azure-fd0", map[string]string{gaZone: "0", gaRegion: "westeurope", corev1.LabelHostname: "azure-fd0", "topology.disk.csi.azure.com/zone": ""}),
	csiNode("node-a1", "hostpath.csi.k8s.io", "topology.hostpath.csi/node"),
	csiNode("node-a2", "hostpath.csi.k8s.io", "topology.hostpath.csi/node"),
	csiNode("node-b1", "hostpath.csi.k8s.io", "topology.hostpath.csi/node"),
	csiNode("edge-1", "hostpath.csi.k8s.io", "topology.hostpath.csi/node"),
	csiNode("azure-fd0", "disk.csi.azure.com", "topology.disk.csi.azure.com/zone"),
	cloudNode("us-east-1a", "us-east-1"), cloudNode("us-central1-a", "us-central1"), cloudNode("eu-west-1b", "eu-west-1"),
	cloudNode("europe-west4-c", "europe-west4"), cloudNode("westeurope-1", ""), cloudNode("z1", "r1"), cloudNode("z2", "r"),
	cloudNode("az-2", "RegionOne"), cloudNode("east-a", "east"), cloudNode("existingDomain", "existingRegion"), cloudNode("zone-c", ""),
}

// warnings records the warnings admission adds to a request.
type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

func TestAdmit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		pv     *api.PersistentVolume
		// want is the PV admitted; nil: unchanged.
		want *api.PersistentVolume
		// wantRefusal is a substring of the 403's message.
		wantRefusal string
		// wantUncarried are the requirements ("key In [values]") the creator is warned no
		// Node carries.
		wantUncarried []string
	}{
		// Upstream's cases (v1.30), with resolvers where its cloud provider answered.
		{name: "non-cloud PV ignored", pv: newPV(hostPath)},
		{name: "unresolvable GCE PD: admitted unlabelled by default", pv: newPV(gcePD("123"))},
		{name: "unresolvable GCE PD refused, as a failed cloud lookup was", config: "unresolved: Refuse\n", pv: newPV(gcePD("123")),
			wantRefusal: "PersistentVolumeLabel: no zone found for GCE PD volume 123 by the resolvers [CSITopology Nodes VolumeID]"},
		{name: "unresolvable AWS EBS refused", config: "unresolved: Refuse\n", pv: newPV(ebs("vol-0123456789abcdef0")),
			wantRefusal: "no zone found for AWS EBS volume vol-0123456789abcdef0"},
		{name: "unresolvable CSI volume: admitted even under Refuse (its topology is the driver's)", config: "unresolved: Refuse\n",
			pv: newPV(csi("example.csi.io", "h1"))},
		{name: "placeholder GCE PD skipped, as upstream skipped it", config: "unresolved: Refuse\n", pv: newPV(gcePD("placeholder-for-provisioning"))},
		{name: "placeholder AWS EBS skipped", config: "unresolved: Refuse\n", pv: newPV(ebs("placeholder-for-provisioning"))},
		{name: "existing beta labels from dynamic provisioning are not changed",
			pv: newPV(ebs("vol-0123456789abcdef0"), withLabels(betaZone, "existingDomain", betaRegion, "existingRegion"), provisioned),
			want: newPV(ebs("vol-0123456789abcdef0"), withLabels(betaZone, "existingDomain", betaRegion, "existingRegion"), provisioned,
				withTerms(term(in(betaZone, "existingDomain"), in(betaRegion, "existingRegion"))))},
		{name: "existing GA labels from dynamic provisioning are not changed",
			pv: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(gaZone, "existingDomain", gaRegion, "existingRegion"), provisioned),
			want: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(gaZone, "existingDomain", gaRegion, "existingRegion"), provisioned,
				withTerms(term(in(gaZone, "existingDomain"), in(gaRegion, "existingRegion"))))},
		{name: "a provisioned PV's regional zone label is split for the affinity",
			pv: newPV(hostPath, withLabels(gaZone, "z2__z1", gaRegion, "r"), provisioned),
			want: newPV(hostPath, withLabels(gaZone, "z2__z1", gaRegion, "r"), provisioned,
				withTerms(term(in(gaZone, "z1", "z2"), in(gaRegion, "r"))))},
		{name: "a provisioned PV with a zone but no region is not trusted",
			pv: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(gaZone, "existingDomain"), provisioned),
			want: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(gaZone, "us-east-1a", gaRegion, "us-east-1"), provisioned,
				withTerms(term(in(gaZone, "us-east-1a"), in(gaRegion, "us-east-1"))))},
		{name: "existing labels from user are changed",
			pv: newPV(gcePD("projects/p/zones/us-central1-a/disks/d"), withLabels(gaZone, "existingDomain", gaRegion, "existingRegion")),
			want: newPV(gcePD("projects/p/zones/us-central1-a/disks/d"), withLabels(gaZone, "us-central1-a", gaRegion, "us-central1"),
				withTerms(term(in(gaZone, "us-central1-a"), in(gaRegion, "us-central1"))))},

		// CSITopology: each driver's zone key, the region by the library's rule.
		{name: "GCE PD CSI: topology.gke.io/zone, region by the library",
			pv: newPV(csi("pd.csi.storage.gke.io", "projects/p/zones/us-central1-a/disks/d"), withTerms(term(in("topology.gke.io/zone", "us-central1-a")))),
			want: newPV(csi("pd.csi.storage.gke.io", "projects/p/zones/us-central1-a/disks/d"), withLabels(gaZone, "us-central1-a", gaRegion, "us-central1"),
				withTerms(term(in("topology.gke.io/zone", "us-central1-a"), in(gaZone, "us-central1-a"), in(gaRegion, "us-central1"))))},
		{name: "GCE PD CSI regional: zones joined by __",
			pv: newPV(csi("pd.csi.storage.gke.io", "projects/p/regions/us-central1/disks/d"), withTerms(term(in("topology.gke.io/zone", "us-central1-b", "us-central1-a")))),
			want: newPV(csi("pd.csi.storage.gke.io", "projects/p/regions/us-central1/disks/d"), withLabels(gaZone, "us-central1-a__us-central1-b", gaRegion, "us-central1"),
				withTerms(term(in("topology.gke.io/zone", "us-central1-b", "us-central1-a"), in(gaZone, "us-central1-a", "us-central1-b"), in(gaRegion, "us-central1"))))},
		{name: "AWS EBS CSI: topology.ebs.csi.aws.com/zone",
			pv: newPV(csi("ebs.csi.aws.com", "vol-0123456789abcdef0"), withTerms(term(in("topology.ebs.csi.aws.com/zone", "eu-west-1b")))),
			want: newPV(csi("ebs.csi.aws.com", "vol-0123456789abcdef0"), withLabels(gaZone, "eu-west-1b", gaRegion, "eu-west-1"),
				withTerms(term(in("topology.ebs.csi.aws.com/zone", "eu-west-1b"), in(gaZone, "eu-west-1b"), in(gaRegion, "eu-west-1"))))},
		{name: "Azure Disk CSI: its zone key, no region rule",
			pv: newPV(csi("disk.csi.azure.com", "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d"), withTerms(term(in("topology.disk.csi.azure.com/zone", "westeurope-1")))),
			want: newPV(csi("disk.csi.azure.com", "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d"), withLabels(gaZone, "westeurope-1"),
				withTerms(term(in("topology.disk.csi.azure.com/zone", "westeurope-1"), in(gaZone, "westeurope-1"))))},
		{name: "Cinder CSI: its zone key, the region from the affinity",
			pv: newPV(csi("cinder.csi.openstack.org", "1234"), withTerms(term(in("topology.cinder.csi.openstack.org/zone", "nova"), in(gaRegion, "RegionOne")))),
			// The region key is already in the affinity: nothing is added (upstream's rule).
			want: newPV(csi("cinder.csi.openstack.org", "1234"), withLabels(gaZone, "nova", gaRegion, "RegionOne"),
				withTerms(term(in("topology.cinder.csi.openstack.org/zone", "nova"), in(gaRegion, "RegionOne"))))},
		{name: "vSphere CSI: its zone and region keys",
			pv: newPV(csi("csi.vsphere.vmware.com", "h"), withTerms(term(in("topology.csi.vmware.com/zone", "z1"), in("topology.csi.vmware.com/region", "r1")))),
			want: newPV(csi("csi.vsphere.vmware.com", "h"), withLabels(gaZone, "z1", gaRegion, "r1"),
				withTerms(term(in("topology.csi.vmware.com/zone", "z1"), in("topology.csi.vmware.com/region", "r1"), in(gaZone, "z1"), in(gaRegion, "r1"))))},
		{name: "any driver: topology.kubernetes.io/zone in its affinity; the key there, so no requirement added",
			pv:   newPV(csi("example.csi.io", "h"), withTerms(term(in(gaZone, "zone-x")))),
			want: newPV(csi("example.csi.io", "h"), withLabels(gaZone, "zone-x"), withTerms(term(in(gaZone, "zone-x"))))},
		{name: "GCE PD CSI with a handle the library refuses: the GA key still read (the region of the Nodes in that zone)",
			pv: newPV(csi("pd.csi.storage.gke.io", "bad"), withTerms(term(in("topology.gke.io/zone", "us-central1-a"), in(gaZone, "us-central1-a")))),
			want: newPV(csi("pd.csi.storage.gke.io", "bad"), withLabels(gaZone, "us-central1-a", gaRegion, "us-central1"),
				withTerms(term(in("topology.gke.io/zone", "us-central1-a"), in(gaZone, "us-central1-a"))))},

		// Nodes.
		{name: "Nodes: a host-path driver's node key gives the node's zone and region",
			pv: newPV(csi("hostpath.csi.k8s.io", "h"), withTerms(term(in("topology.hostpath.csi/node", "node-a1")))),
			want: newPV(csi("hostpath.csi.k8s.io", "h"), withLabels(gaZone, "zone-a", gaRegion, "region-1"),
				withTerms(term(in("topology.hostpath.csi/node", "node-a1"), in(gaZone, "zone-a"), in(gaRegion, "region-1"))))},
		{name: "Nodes: beta-labelled nodes count; two terms, two zones",
			pv: newPV(csi("hostpath.csi.k8s.io", "h"), withTerms(term(in("topology.hostpath.csi/node", "node-a1")), term(in("topology.hostpath.csi/node", "node-b1")))),
			want: newPV(csi("hostpath.csi.k8s.io", "h"), withLabels(gaZone, "zone-a__zone-b", gaRegion, "region-1"),
				withTerms(term(in("topology.hostpath.csi/node", "node-a1"), in(gaZone, "zone-a", "zone-b"), in(gaRegion, "region-1")),
					term(in("topology.hostpath.csi/node", "node-b1"), in(gaZone, "zone-a", "zone-b"), in(gaRegion, "region-1"))))},
		{name: "Nodes: a local volume's host name gives the node's zone and region",
			pv:   newPV(hostPath, withTerms(term(in(corev1.LabelHostname, "node-a2")))),
			want: newPV(hostPath, withLabels(gaZone, "zone-a", gaRegion, "region-1"), withTerms(term(in(corev1.LabelHostname, "node-a2"), in(gaZone, "zone-a"), in(gaRegion, "region-1"))))},
		{name: "Nodes: host names of several nodes of one zone",
			pv:   newPV(hostPath, withTerms(term(in(corev1.LabelHostname, "node-a1", "node-a2")))),
			want: newPV(hostPath, withLabels(gaZone, "zone-a", gaRegion, "region-1"), withTerms(term(in(corev1.LabelHostname, "node-a1", "node-a2"), in(gaZone, "zone-a"), in(gaRegion, "region-1"))))},
		{name: "Nodes: a pool label is not read, though its Nodes are in one zone today",
			pv: newPV(hostPath, withTerms(term(in("rack", "r1"))))},
		{name: "Nodes: kubernetes.io/os is not read; the term's host name is",
			pv: newPV(hostPath, withTerms(term(in("kubernetes.io/os", "linux"), in(corev1.LabelHostname, "node-a1")))),
			want: newPV(hostPath, withLabels(gaZone, "zone-a", gaRegion, "region-1"),
				withTerms(term(in("kubernetes.io/os", "linux"), in(corev1.LabelHostname, "node-a1"), in(gaZone, "zone-a"), in(gaRegion, "region-1"))))},
		{name: "Nodes: a requirement across zones does not determine one; the term's other does",
			pv: newPV(hostPath, withTerms(term(in(corev1.LabelHostname, "node-a1", "node-b1"), in("topology.hostpath.csi/node", "node-a1")))),
			want: newPV(hostPath, withLabels(gaZone, "zone-a", gaRegion, "region-1"),
				withTerms(term(in(corev1.LabelHostname, "node-a1", "node-b1"), in("topology.hostpath.csi/node", "node-a1"), in(gaZone, "zone-a"), in(gaRegion, "region-1"))))},
		{name: "Nodes: a term nothing determines leaves the volume unresolved",
			pv: newPV(hostPath, withTerms(term(in(corev1.LabelHostname, "node-a1")), term(in("rack", "r1"))))},
		{name: "Nodes: a node without a zone determines nothing",
			pv: newPV(hostPath, withTerms(term(in("topology.hostpath.csi/node", "edge-1"))))},
		{name: "Nodes: no node selected",
			pv: newPV(hostPath, withTerms(term(in("topology.hostpath.csi/node", "node-z9"))))},
		{name: "Nodes: terms whose requirements disagree determine nothing",
			pv: newPV(hostPath, withTerms(term(in(corev1.LabelHostname, "node-a1"), in(corev1.LabelHostname, "node-b1"))))},
		{name: "Nodes: a key no CSINode registers is not read",
			pv: newPV(csi("other.csi.io", "h"), withTerms(term(in("topology.other.csi.io/node", "node-a1"))))},

		// An empty value is never a zone.
		{name: "Azure Disk CSI non-zonal: zone key In [\"\"] is no zone, and its Nodes' fault domain none either",
			pv: newPV(csi("disk.csi.azure.com", "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d"), withTerms(term(in("topology.disk.csi.azure.com/zone", ""))))},
		{name: "an empty zone among others is dropped",
			pv:   newPV(csi("example.csi.io", "h"), withTerms(term(in(gaZone, "", "zone-a")))),
			want: newPV(csi("example.csi.io", "h"), withLabels(gaZone, "zone-a", gaRegion, "region-1"), withTerms(term(in(gaZone, "", "zone-a"))))},
		{name: "a provisioner's empty region is no region: no requirement for it",
			pv:   newPV(hostPath, withLabels(gaZone, "z1", gaRegion, ""), provisioned),
			want: newPV(hostPath, withLabels(gaZone, "z1", gaRegion, ""), provisioned, withTerms(term(in(gaZone, "z1"))))},

		// What the volume itself says (its identifier, a provisioner's labels, an operator's
		// rule) is required as 1.30 required it, whatever the Nodes carry; what the cluster
		// suggests (a CSI driver's topology, the Nodes), only when a Node carries it.
		{name: "VolumeID: a zone no Node is in: labelled and required, as 1.30",
			pv: newPV(ebs("aws://ap-south-1a/vol-0123456789abcdef0")),
			want: newPV(ebs("aws://ap-south-1a/vol-0123456789abcdef0"), withLabels(gaZone, "ap-south-1a", gaRegion, "ap-south-1"),
				withTerms(term(in(gaZone, "ap-south-1a"), in(gaRegion, "ap-south-1")))), wantUncarried: []string{"topology.kubernetes.io/zone In [\"ap-south-1a\"]", "topology.kubernetes.io/region In [\"ap-south-1\"]"}},
		{name: "Rules: a zone no Node is in: labelled and required",
			config: "rules:\n- source: Cinder\n  match: '^(?P<zone>az-[0-9]+)-'\n  zone: '${zone}'\n  region: RegionNine\n",
			pv:     newPV(cinder("az-9-volume")),
			want:   newPV(cinder("az-9-volume"), withLabels(gaZone, "az-9", gaRegion, "RegionNine"), withTerms(term(in(gaZone, "az-9"), in(gaRegion, "RegionNine")))), wantUncarried: []string{"topology.kubernetes.io/zone In [\"az-9\"]", "topology.kubernetes.io/region In [\"RegionNine\"]"}},
		{name: "CSITopology: a zone no Node is in: labelled, no requirement",
			pv: newPV(csi("ebs.csi.aws.com", "vol-0123456789abcdef0"), withTerms(term(in("topology.ebs.csi.aws.com/zone", "ap-south-1a")))),
			want: newPV(csi("ebs.csi.aws.com", "vol-0123456789abcdef0"), withLabels(gaZone, "ap-south-1a", gaRegion, "ap-south-1"),
				withTerms(term(in("topology.ebs.csi.aws.com/zone", "ap-south-1a"))))},
		{name: "beta keys the Nodes do not carry: labelled, no requirement", config: "labelKeys: Beta\n",
			pv: newPV(hostPath, withTerms(term(in(corev1.LabelHostname, "node-a1")))),
			// node-b1 carries the beta region: that requirement is added.
			want: newPV(hostPath, withLabels(betaZone, "zone-a", betaRegion, "region-1"), withTerms(term(in(corev1.LabelHostname, "node-a1"), in(betaRegion, "region-1"))))},
		{name: "a provisioner's region the Nodes do not carry: required, as 1.30",
			pv:   newPV(hostPath, withLabels(gaZone, "zone-a", gaRegion, "region-9"), provisioned),
			want: newPV(hostPath, withLabels(gaZone, "zone-a", gaRegion, "region-9"), provisioned, withTerms(term(in(gaZone, "zone-a"), in(gaRegion, "region-9")))), wantUncarried: []string{"topology.kubernetes.io/region In [\"region-9\"]"}},
		{name: "Nodes: a region the Nodes do not carry: the zone's requirement only",
			config: "resolvers: [Nodes, VolumeID]\n",
			// node-zone-c has no region: the handle's region-9 completes the zone, no Node carries it.
			pv:   newPV(csi("pd.csi.storage.gke.io", "projects/p/regions/region-9/disks/d"), withTerms(term(in(corev1.LabelHostname, "node-zone-c")))),
			want: newPV(csi("pd.csi.storage.gke.io", "projects/p/regions/region-9/disks/d"), withLabels(gaZone, "zone-c", gaRegion, "region-9"), withTerms(term(in(corev1.LabelHostname, "node-zone-c"), in(gaZone, "zone-c"))))},
		{name: "VolumeID on a CSI handle: a zone no Node is in: labelled, no requirement (a CSI volume's place is inferred)",
			pv:   newPV(csi("pd.csi.storage.gke.io", "projects/p/zones/asia-east1-a/disks/d")),
			want: newPV(csi("pd.csi.storage.gke.io", "projects/p/zones/asia-east1-a/disks/d"), withLabels(gaZone, "asia-east1-a", gaRegion, "asia-east1"))},
		{name: "Rules on an in-tree volume, beta keys: the zone required, the Nodes' region only if a Node carries it (azure-fd0 carries the GA key only)",
			config: "labelKeys: Beta\nrules:\n- source: Cinder\n  zone: '0'\n",
			pv:     newPV(cinder("v")),
			want:   newPV(cinder("v"), withLabels(betaZone, "0", betaRegion, "westeurope"), withTerms(term(in(betaZone, "0")))), wantUncarried: []string{"failure-domain.beta.kubernetes.io/zone In [\"0\"]"}},
		{name: "Rules on an in-tree volume, the region from the Nodes of the zone: required, the region too (a Node carries it)",
			config: "rules:\n- source: Cinder\n  zone: zone-a\n",
			pv:     newPV(cinder("v")),
			want:   newPV(cinder("v"), withLabels(gaZone, "zone-a", gaRegion, "region-1"), withTerms(term(in(gaZone, "zone-a"), in(gaRegion, "region-1"))))},
		{name: "a regional volume: one zone carried is enough, every zone kept",
			pv:   newPV(hostPath, withLabels(gaZone, "zone-a__zone-q", gaRegion, "region-1"), provisioned),
			want: newPV(hostPath, withLabels(gaZone, "zone-a__zone-q", gaRegion, "region-1"), provisioned, withTerms(term(in(gaZone, "zone-a", "zone-q"), in(gaRegion, "region-1"))))},

		// VolumeID.
		{name: "VolumeID: AWS EBS aws://<zone>/vol-…",
			pv:   newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0")),
			want: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(gaZone, "us-east-1a", gaRegion, "us-east-1"), withTerms(term(in(gaZone, "us-east-1a"), in(gaRegion, "us-east-1"))))},
		{name: "VolumeID: AWS EBS without a zone, or not a volume ID",
			config: "unresolved: Refuse\n", pv: newPV(ebs("aws:///vol-0123456789abcdef0")), wantRefusal: "no zone found for AWS EBS volume aws:///vol-0123456789abcdef0"},
		{name: "VolumeID: AWS EBS with a zone but no volume ID",
			config: "unresolved: Refuse\n", pv: newPV(ebs("aws://us-east-1a/disk")), wantRefusal: "no zone found"},
		{name: "VolumeID: GCE PD CSI handle without affinity",
			pv:   newPV(csi("pd.csi.storage.gke.io", "projects/p/zones/europe-west4-c/disks/d")),
			want: newPV(csi("pd.csi.storage.gke.io", "projects/p/zones/europe-west4-c/disks/d"), withLabels(gaZone, "europe-west4-c", gaRegion, "europe-west4"), withTerms(term(in(gaZone, "europe-west4-c"), in(gaRegion, "europe-west4"))))},
		{name: "VolumeID: a regional handle gives a region only; a zone from the nodes completes it (no Node carries that region)",
			config: "resolvers: [VolumeID, Nodes]\n",
			pv:     newPV(csi("pd.csi.storage.gke.io", "projects/p/regions/region-9/disks/d"), withTerms(term(in(corev1.LabelHostname, "node-a1")))),
			want:   newPV(csi("pd.csi.storage.gke.io", "projects/p/regions/region-9/disks/d"), withLabels(gaZone, "zone-a", gaRegion, "region-9"), withTerms(term(in(corev1.LabelHostname, "node-a1"), in(gaZone, "zone-a"))))},
		{name: "VolumeID: an UNSPECIFIED zone is none", config: "unresolved: Refuse\n",
			pv: newPV(gcePD("projects/p/zones/UNSPECIFIED/disks/d")), wantRefusal: "no zone found"},

		// Rules.
		{name: "Rules: a Cinder ID's named group and a literal region",
			config: "rules:\n- source: Cinder\n  match: '^(?P<zone>az-[0-9]+)-'\n  zone: '${zone}'\n  region: RegionOne\n",
			pv:     newPV(cinder("az-2-volume")),
			want:   newPV(cinder("az-2-volume"), withLabels(gaZone, "az-2", gaRegion, "RegionOne"), withTerms(term(in(gaZone, "az-2"), in(gaRegion, "RegionOne"))))},
		{name: "Rules: the first matching rule wins; a CSI rule names its driver",
			config: "rules:\n- source: CSI\n  driver: other.csi.io\n  zone: wrong\n- source: CSI\n  driver: nfs.csi.k8s.io\n  match: '^([a-z]+)/'\n  zone: '$1-a__$1-b'\n  region: '$1'\n- source: CSI\n  zone: late\n",
			pv:     newPV(csi("nfs.csi.k8s.io", "east/share")),
			want:   newPV(csi("nfs.csi.k8s.io", "east/share"), withLabels(gaZone, "east-a__east-b", gaRegion, "east"), withTerms(term(in(gaZone, "east-a", "east-b"), in(gaRegion, "east"))))},
		{name: "Rules: a zone that expands to no label value is none", config: "unresolved: Refuse\nrules:\n- source: AWSElasticBlockStore\n  match: '(.*)'\n  zone: '$1'\n",
			pv: newPV(ebs("vol with spaces")), wantRefusal: "no zone found"},
		{name: "Rules: listed first, a rule beats the PV's own topology",
			config: "resolvers: [Rules, CSITopology]\nrules:\n- source: CSI\n  zone: ruled\n",
			pv:     newPV(csi("example.csi.io", "h"), withTerms(term(in(gaZone, "zone-x")))),
			// The affinity has the zone key: the labels are written, no requirement added.
			want: newPV(csi("example.csi.io", "h"), withLabels(gaZone, "ruled"), withTerms(term(in(gaZone, "zone-x"))))},

		// Region completion, label keys, node-affinity policy.
		{name: "a zone without a region: the one region of the Nodes in that zone",
			config: "resolvers: [CSITopology, Nodes]\n",
			pv:     newPV(csi("disk.csi.azure.com", "h"), withTerms(term(in("topology.disk.csi.azure.com/zone", "zone-a")))),
			want: newPV(csi("disk.csi.azure.com", "h"), withLabels(gaZone, "zone-a", gaRegion, "region-1"),
				withTerms(term(in("topology.disk.csi.azure.com/zone", "zone-a"), in(gaZone, "zone-a"), in(gaRegion, "region-1"))))},
		{name: "a later resolver's region for other zones is not taken",
			config: "resolvers: [CSITopology, Nodes]\n",
			pv:     newPV(csi("disk.csi.azure.com", "h"), withTerms(term(in("topology.disk.csi.azure.com/zone", "zone-c"), in(corev1.LabelHostname, "node-a1")))),
			want: newPV(csi("disk.csi.azure.com", "h"), withLabels(gaZone, "zone-c"),
				withTerms(term(in("topology.disk.csi.azure.com/zone", "zone-c"), in(corev1.LabelHostname, "node-a1"), in(gaZone, "zone-c"))))},
		{name: "beta keys", config: "labelKeys: Beta\n",
			pv:   newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0")),
			want: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(betaZone, "us-east-1a", betaRegion, "us-east-1"), withTerms(term(in(betaZone, "us-east-1a"), in(betaRegion, "us-east-1"))))},
		{name: "both pairs", config: "labelKeys: Both\n",
			pv: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0")),
			want: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(gaZone, "us-east-1a", gaRegion, "us-east-1", betaZone, "us-east-1a", betaRegion, "us-east-1"),
				withTerms(term(in(gaZone, "us-east-1a"), in(gaRegion, "us-east-1"), in(betaZone, "us-east-1a"), in(betaRegion, "us-east-1"))))},
		{name: "beta zone key already in the affinity: a conflict, nothing added", config: "labelKeys: Both\n",
			pv:   newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withTerms(term(in("rack", "r1")), term(in(betaRegion, "us-east-1")))),
			want: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(gaZone, "us-east-1a", gaRegion, "us-east-1", betaZone, "us-east-1a", betaRegion, "us-east-1"), withTerms(term(in("rack", "r1")), term(in(betaRegion, "us-east-1"))))},
		{name: "every term gets the requirements", config: "resolvers: [VolumeID]\n",
			pv: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withTerms(term(in("rack", "r1")), term(in("rack", "r2")))),
			want: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(gaZone, "us-east-1a", gaRegion, "us-east-1"),
				withTerms(term(in("rack", "r1"), in(gaZone, "us-east-1a"), in(gaRegion, "us-east-1")), term(in("rack", "r2"), in(gaZone, "us-east-1a"), in(gaRegion, "us-east-1"))))},
		{name: "nodeAffinity None: labels only", config: "nodeAffinity: None\n",
			pv:   newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0")),
			want: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(gaZone, "us-east-1a", gaRegion, "us-east-1"))},
		{name: "an affinity value that is no label value is not written",
			pv: newPV(csi("example.csi.io", "h"), withTerms(term(in(gaZone, strings.Repeat("z", 64)))))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, tc.config, clusterObjects...)
			pv := tc.pv.DeepCopy()
			var warned warnings
			ctx := warning.WithWarningRecorder(context.Background(), &warned)
			err := admissiontesting.WithReinvocationTesting(t, admission.NewChainHandler(p)).Admit(ctx, createAttributes(pv), nil)
			if tc.wantRefusal != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantRefusal) {
					t.Fatalf("got %v, want a 403 with %q", err, tc.wantRefusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var wantWarnings []string
			for _, req := range tc.wantUncarried {
				key, values, _ := strings.Cut(req, " In ")
				wantWarnings = append(wantWarnings, fmt.Sprintf("PersistentVolumeLabel: no Node is labelled %s in %s yet: pods using PersistentVolume pv stay Pending until one is", key, values))
			}
			if diff := cmp.Diff(wantWarnings, []string(warned)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			want := tc.want
			if want == nil {
				want = tc.pv
			}
			if diff := cmp.Diff(want, pv); diff != "" {
				t.Errorf("admitted PV (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdmitIgnores(t *testing.T) {
	p := newPlugin(t, "unresolved: Refuse\n", clusterObjects...)
	pvResource := api.Resource("persistentvolumes").WithVersion("v1")
	unresolvable := newPV(gcePD("123"))
	for _, tc := range []struct {
		name  string
		attrs admission.Attributes
	}{
		{"a pod", admission.NewAttributesRecord(&api.Pod{}, nil, api.Kind("Pod").WithVersion("v1"), "ns", "p",
			api.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, nil)},
		{"a PV's status", admission.NewAttributesRecord(unresolvable, nil, api.Kind("PersistentVolume").WithVersion("v1"), "", "pv",
			pvResource, "status", admission.Create, &metav1.CreateOptions{}, false, nil)},
		{"another type under persistentvolumes", admission.NewAttributesRecord(&api.Pod{}, nil, api.Kind("PersistentVolume").WithVersion("v1"), "", "pv",
			pvResource, "", admission.Create, &metav1.CreateOptions{}, false, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := admissiontesting.WithReinvocationTesting(t, admission.NewChainHandler(p)).Admit(context.Background(), tc.attrs, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	if p.Handles(admission.Update) || p.Handles(admission.Delete) || !p.Handles(admission.Create) {
		t.Error("the plugin must handle CREATE only, as upstream's did")
	}
}

// TestNotReady: until the informers have listed the Nodes (and, for the Nodes resolver, the
// CSINodes), only a volume the plugin would read them for waits, and is refused past the
// wait; every other volume is admitted as if they were listed.
func TestNotReady(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		pv           *api.PersistentVolume
		// nodesListed: the Node informer has synced (the CSINode informer never has).
		nodesListed bool
		// want is the PV admitted; nil: unchanged. wantRefusal: a 403 saying so.
		want        *api.PersistentVolume
		wantRefusal string
	}{
		{name: "a host-path volume without affinity", pv: newPV(hostPath)},
		{name: "an NFS volume without affinity", pv: newPV(api.PersistentVolumeSource{NFS: &api.NFSVolumeSource{Server: "nfs", Path: "/export"}})},
		{name: "a volume whose affinity has only the standard keys, none added", config: "resolvers: [CSITopology]\n",
			pv:   newPV(csi("example.csi.io", "h"), withTerms(term(in(gaZone, "zone-x")))),
			want: newPV(csi("example.csi.io", "h"), withLabels(gaZone, "zone-x"), withTerms(term(in(gaZone, "zone-x"))))},
		{name: "a zone without a region, with the Nodes resolver: the region of the Nodes in the zone waits for them",
			pv:          newPV(csi("example.csi.io", "h"), withTerms(term(in(gaZone, "zone-x")))),
			wantRefusal: "not yet ready to handle request: the Nodes are not listed yet"},
		{name: "an in-tree volume its ID gives a zone but no region: waits for the Nodes' region", config: "rules:\n- source: Cinder\n  zone: zone-a\n",
			pv:          newPV(cinder("v")),
			wantRefusal: "not yet ready to handle request: the Nodes are not listed yet"},
		{name: "a volume the Nodes resolver could read waits", pv: newPV(hostPath, withTerms(term(in(corev1.LabelHostname, "node-a1")))),
			wantRefusal: "not yet ready to handle request: the Nodes and CSINodes are not listed yet"},
		{name: "the Nodes listed but not the CSINodes: still waits", nodesListed: true,
			pv: newPV(hostPath, withTerms(term(in(corev1.LabelHostname, "node-a1")))), wantRefusal: "the Nodes and CSINodes are not listed yet"},
		{name: "a volume a CSI driver's topology locates: its requirements need the Nodes", config: "resolvers: [CSITopology]\n",
			pv:          newPV(csi("ebs.csi.aws.com", "vol-0123456789abcdef0"), withTerms(term(in("topology.ebs.csi.aws.com/zone", "eu-west-1b")))),
			wantRefusal: "not yet ready to handle request: the Nodes are not listed yet"},
		{name: "a volume its ID locates does not wait: its requirements are 1.30's", config: "resolvers: [VolumeID]\n",
			pv: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0")),
			want: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(gaZone, "us-east-1a", gaRegion, "us-east-1"),
				withTerms(term(in(gaZone, "us-east-1a"), in(gaRegion, "us-east-1"))))},
		{name: "without the Nodes resolver, a host-name affinity does not wait", config: "resolvers: [CSITopology]\n",
			pv: newPV(hostPath, withTerms(term(in(corev1.LabelHostname, "node-a1"))))},
		{name: "nodeAffinity None: a located volume does not wait", config: "resolvers: [VolumeID]\nnodeAffinity: None\n",
			pv:   newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0")),
			want: newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0"), withLabels(gaZone, "us-east-1a", gaRegion, "us-east-1"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, tc.config, clusterObjects...)
			p.nodesSynced = func() bool { return tc.nodesListed }
			p.csiNodesSynced = func() bool { return false }
			p.readyTimeout = 0
			pv := tc.pv.DeepCopy()
			err := admissiontesting.WithReinvocationTesting(t, admission.NewChainHandler(p)).Admit(context.Background(), createAttributes(pv), nil)
			if tc.wantRefusal != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantRefusal) {
					t.Fatalf("got %v, want a 403 saying %q", err, tc.wantRefusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == nil {
				want = tc.pv
			}
			if diff := cmp.Diff(want, pv); diff != "" {
				t.Errorf("admitted PV (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMetricOncePerRequest: the server's second run of the plugin, after a webhook changed
// the volume, does not count the volume again.
func TestMetricOncePerRequest(t *testing.T) {
	p := newPlugin(t, "", clusterObjects...)
	// value is the count of every outcome by every resolver: a second pass may find the zones
	// by another resolver (CSITopology reads the first pass's requirements).
	value := func() float64 {
		total := 0.0
		for _, outcome := range []string{outcomeLabelled, outcomeTrusted, outcomeUnresolved, outcomeRefused} {
			for _, by := range []string{"CSITopology", "Nodes", "VolumeID", "Rules", ""} {
				v, err := metricstestutil.GetCounterMetricValue(volumesAdmitted.WithLabelValues(outcome, by))
				if err != nil {
					t.Fatal(err)
				}
				total += v
			}
		}
		return total
	}
	before := value()
	a := createAttributes(newPV(ebs("aws://us-east-1a/vol-0123456789abcdef0")))
	if err := p.Admit(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	if got := value(); got != before+1 {
		t.Fatalf("after the first run the counter went from %v to %v, want one more", before, got)
	}
	a.GetReinvocationContext().SetIsReinvoke()
	if err := p.Admit(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	if got := value(); got != before+1 {
		t.Errorf("after the reinvocation the counter is %v, want %v: a volume counted twice", got, before+1)
	}
}

func TestValidateInitialization(t *testing.T) {
	cfg, err := LoadConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ValidateInitialization(); err == nil || !strings.Contains(err.Error(), "missing Node informer") {
		t.Errorf("got %v, want the missing informer named", err)
	}
	// With neither the Nodes resolver nor node affinity to add, the plugin reads no Nodes.
	cfg.Resolvers, cfg.NodeAffinity = cfg.Resolvers[:1], "None"
	if p, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	if err := p.ValidateInitialization(); err != nil {
		t.Errorf("without the Nodes: %v", err)
	}
}
