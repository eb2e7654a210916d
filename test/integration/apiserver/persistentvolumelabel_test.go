package apiserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	volumehelpers "k8s.io/cloud-provider/volume/helpers"

	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// persistentVolumeLabelConfig is an admission config giving PersistentVolumeLabel settings.
func persistentVolumeLabelConfig(t *testing.T, settings string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admission.yaml")
	config := `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PersistentVolumeLabel
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: PersistentVolumeLabelConfiguration
` + settings
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// pvlPV is a PersistentVolume of 1Gi of source, with labels, annotations and one node-affinity
// term of requirements ("key=value" or "key=v1,v2"); none when requirements is empty.
func pvlPV(name string, source corev1.PersistentVolumeSource, labels, annotations map[string]string, requirements ...string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: source,
		},
	}
	if len(requirements) > 0 {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: requirementsOf(requirements...)}}}}
	}
	return pv
}

func requirementsOf(requirements ...string) []corev1.NodeSelectorRequirement {
	var reqs []corev1.NodeSelectorRequirement
	for _, r := range requirements {
		key, values, _ := strings.Cut(r, "=")
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: strings.Split(values, ",")})
	}
	return reqs
}

func csiSource(driver, handle string) corev1.PersistentVolumeSource {
	return corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}}
}

func TestPersistentVolumeLabel(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	server := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/persistentvolumelabel",
		"--enable-admission-plugins=PersistentVolumeLabel",
		"--admission-control-config-file="+persistentVolumeLabelConfig(t, `    unresolved: Refuse
    rules:
    - source: Cinder
      match: '^(?P<zone>az-[0-9]+)-'
      zone: '${zone}'
      region: RegionOne
`))
	client := server.Client
	ctx := context.Background()

	// Nodes as kubelets would have registered them (none runs): a Node in each zone of the
	// cloud volumes below but the ap-south-1 ones (the cases of Nodes carrying none); two zones of
	// one region, the host-path CSI driver's topology key (registered in their CSINodes), a
	// node pool label, one node labelled with the beta keys only. node-b comes last: once
	// the plugin knows it, it knows every Node before it.
	cloudNode := func(zone, region string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + zone, Labels: map[string]string{
			corev1.LabelTopologyZone: zone, corev1.LabelTopologyRegion: region}}}
	}
	for _, n := range []*corev1.Node{
		cloudNode("us-central1-a", "us-central1"), cloudNode("eu-west-1a", "eu-west-1"), cloudNode("us-east-1c", "us-east-1"),
		cloudNode("az-3", "RegionOne"), cloudNode("us-west-2b", "us-west-2"),
		{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{
			corev1.LabelTopologyZone: "zone-a", corev1.LabelTopologyRegion: "region-1", "topology.hostpath.csi/node": "node-a", "pool": "gold"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Labels: map[string]string{
			corev1.LabelFailureDomainBetaZone: "zone-b", corev1.LabelFailureDomainBetaRegion: "region-1", "topology.hostpath.csi/node": "node-b"}}},
	} {
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"node-a", "node-b"} {
		csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
			{Name: "hostpath.csi.k8s.io", NodeID: name, TopologyKeys: []string{"topology.hostpath.csi/node"}}}}}
		if _, err := client.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The plugin reads the Nodes and CSINodes from the server's informers: wait until it has
	// node-b and the driver's key, as a dry run of a volume on it says.
	probe := pvlPV("probe", csiSource("hostpath.csi.k8s.io", "probe"), nil, nil, "topology.hostpath.csi/node=node-b")
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pv, err := client.CoreV1().PersistentVolumes().Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && pv.Labels[corev1.LabelTopologyZone] == "zone-b", err
	}); err != nil {
		t.Fatalf("the plugin never saw node-b: %v", err)
	}

	// The creator of each volume below hears of requirements no Node carries.
	warned := &framework.WarningRecorder{}
	warnedConfig := rest.CopyConfig(server.Config)
	warnedConfig.WarningHandler = warned
	warnedClient, err := kubernetes.NewForConfig(warnedConfig)
	if err != nil {
		t.Fatal(err)
	}
	zoneRegion := func(zone, region string) map[string]string {
		return map[string]string{corev1.LabelTopologyZone: zone, corev1.LabelTopologyRegion: region}
	}
	provisionedBy := map[string]string{"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}
	for _, tc := range []struct {
		name string
		pv   *corev1.PersistentVolume
		// wantLabels are the PV's labels as created; wantAffinity its one term's requirements.
		wantLabels   map[string]string
		wantAffinity []string
		// wantWarnings is how many warnings the creator gets: one per requirement the volume
		// states that no Node carries.
		wantWarnings int
	}{
		{name: "CSITopology: a GCE PD CSI volume's zone key; the region by csi-translation-lib",
			pv:         pvlPV("gce-pd-csi", csiSource("pd.csi.storage.gke.io", "projects/p/zones/us-central1-a/disks/d"), nil, nil, "topology.gke.io/zone=us-central1-a"),
			wantLabels: zoneRegion("us-central1-a", "us-central1"), wantAffinity: []string{"topology.gke.io/zone=us-central1-a",
				corev1.LabelTopologyZone + "=us-central1-a", corev1.LabelTopologyRegion + "=us-central1"}},
		{name: "CSITopology: a regional AWS EBS volume, zones joined by __",
			pv:         pvlPV("ebs-csi-regional", csiSource("ebs.csi.aws.com", "vol-0123456789abcdef0"), nil, nil, "topology.ebs.csi.aws.com/zone=eu-west-1b,eu-west-1a"),
			wantLabels: zoneRegion("eu-west-1a__eu-west-1b", "eu-west-1"), wantAffinity: []string{"topology.ebs.csi.aws.com/zone=eu-west-1b,eu-west-1a",
				corev1.LabelTopologyZone + "=eu-west-1a,eu-west-1b", corev1.LabelTopologyRegion + "=eu-west-1"}},
		{name: "Nodes: a host-path CSI volume takes its node's zone and region (beta-labelled node: no Node carries the GA zone-b, no requirement for it)",
			pv:         pvlPV("hostpath-b", csiSource("hostpath.csi.k8s.io", "b"), nil, nil, "topology.hostpath.csi/node=node-b"),
			wantLabels: zoneRegion("zone-b", "region-1"), wantAffinity: []string{"topology.hostpath.csi/node=node-b",
				corev1.LabelTopologyRegion + "=region-1"}},
		{name: "VolumeID: an in-tree AWS EBS volume aws://<zone>/vol-…, the user's labels overwritten",
			pv: pvlPV("ebs-in-tree", corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1c/vol-0123456789abcdef0"}},
				zoneRegion("mine", "mine"), nil),
			wantLabels: zoneRegion("us-east-1c", "us-east-1"), wantAffinity: []string{corev1.LabelTopologyZone + "=us-east-1c", corev1.LabelTopologyRegion + "=us-east-1"}},
		{name: "Rules: an in-tree Cinder volume by the operator's rule",
			pv:         pvlPV("cinder-rule", corev1.PersistentVolumeSource{Cinder: &corev1.CinderPersistentVolumeSource{VolumeID: "az-3-data"}}, nil, nil),
			wantLabels: zoneRegion("az-3", "RegionOne"), wantAffinity: []string{corev1.LabelTopologyZone + "=az-3", corev1.LabelTopologyRegion + "=RegionOne"}},
		{name: "a provisioner's labels are trusted, its affinity completed",
			pv:         pvlPV("provisioned", csiSource("ebs.csi.aws.com", "vol-0123456789abcdef1"), zoneRegion("us-west-2b", "us-west-2"), provisionedBy),
			wantLabels: zoneRegion("us-west-2b", "us-west-2"), wantAffinity: []string{corev1.LabelTopologyZone + "=us-west-2b", corev1.LabelTopologyRegion + "=us-west-2"}},
		{name: "a volume nothing locates: admitted unlabelled (a CSI volume is never refused)",
			pv:         pvlPV("nfs-csi", csiSource("nfs.csi.k8s.io", "server/share"), nil, nil),
			wantLabels: nil},
		{name: "an Azure Disk of a non-zonal region (zone key In [\"\"]): no zone, so no label and no requirement",
			pv: pvlPV("azure-non-zonal", csiSource("disk.csi.azure.com", "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d"), nil, nil,
				"topology.disk.csi.azure.com/zone="),
			wantLabels: nil, wantAffinity: []string{"topology.disk.csi.azure.com/zone="}},
		{name: "Nodes: a node pool label is not read, though its one Node is in one zone today",
			pv:         pvlPV("pool-gold", csiSource("hostpath.csi.k8s.io", "gold"), nil, nil, "pool=gold"),
			wantLabels: nil, wantAffinity: []string{"pool=gold"}},
		// What the volume says of itself is required as 1.30 required it, whatever the Nodes
		// carry; what a CSI driver's topology or the Nodes suggest, only when a Node carries it.
		{name: "VolumeID: a zone no Node is in: labelled and required, as 1.30",
			pv: pvlPV("ebs-no-node", corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://ap-south-1a/vol-0123456789abcdef0"}},
				nil, nil),
			wantLabels: zoneRegion("ap-south-1a", "ap-south-1"), wantAffinity: []string{corev1.LabelTopologyZone + "=ap-south-1a", corev1.LabelTopologyRegion + "=ap-south-1"},
			wantWarnings: 2},
		{name: "a provisioner's labels no Node carries: required, as 1.30",
			pv:         pvlPV("provisioned-no-node", csiSource("ebs.csi.aws.com", "vol-0123456789abcdef2"), zoneRegion("ap-south-1b", "ap-south-1"), provisionedBy),
			wantLabels: zoneRegion("ap-south-1b", "ap-south-1"), wantAffinity: []string{corev1.LabelTopologyZone + "=ap-south-1b", corev1.LabelTopologyRegion + "=ap-south-1"},
			wantWarnings: 2},
		{name: "CSITopology: a zone no Node is in: labelled, no requirement (it would keep the volume's pods from every Node, for good)",
			pv:         pvlPV("ebs-csi-no-node", csiSource("ebs.csi.aws.com", "vol-0123456789abcdef3"), nil, nil, "topology.ebs.csi.aws.com/zone=ap-south-1c"),
			wantLabels: zoneRegion("ap-south-1c", "ap-south-1"), wantAffinity: []string{"topology.ebs.csi.aws.com/zone=ap-south-1c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			created, err := warnedClient.CoreV1().PersistentVolumes().Create(ctx, tc.pv, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			warnings := warned.Take()
			if len(warnings) != tc.wantWarnings {
				t.Errorf("warnings %q, want %d", warnings, tc.wantWarnings)
			}
			for _, w := range warnings {
				if !strings.Contains(w, "stay Pending until one is") || !strings.Contains(w, tc.pv.Name) {
					t.Errorf("warning %q does not say the volume's pods stay Pending", w)
				}
			}
			if diff := cmp.Diff(tc.wantLabels, created.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			var gotAffinity []corev1.NodeSelectorRequirement
			if na := created.Spec.NodeAffinity; na != nil {
				gotAffinity = na.Required.NodeSelectorTerms[0].MatchExpressions
			}
			var wantAffinity []corev1.NodeSelectorRequirement
			if tc.wantAffinity != nil {
				wantAffinity = requirementsOf(tc.wantAffinity...)
			}
			if diff := cmp.Diff(wantAffinity, gotAffinity); diff != "" {
				t.Errorf("node affinity (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("an in-tree volume nothing locates is refused, and counted", func(t *testing.T) {
		const refused = `portcullis_persistentvolumelabel_volumes_total{outcome="refused",resolver=""}`
		before := sampleValue(t, client, refused)
		pv := pvlPV("gce-pd-unknown", corev1.PersistentVolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "my-disk"}}, nil, nil)
		_, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		const want = "PersistentVolumeLabel: no zone found for GCE PD volume my-disk by the resolvers [CSITopology Nodes VolumeID Rules]"
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want a 403 saying %q", err, want)
		}
		if after := sampleValue(t, client, refused); after != before+1 {
			t.Errorf("%s went from %v to %v, want one more", refused, before, after)
		}
		// A provisioner's placeholder is not looked up, as upstream skipped it.
		placeholder := pvlPV("gce-pd-placeholder", corev1.PersistentVolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "placeholder-for-provisioning"}}, nil, nil)
		if _, err := client.CoreV1().PersistentVolumes().Create(ctx, placeholder, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a pod's claim bound to a labelled volume: the labels the scheduler's VolumeZone reads admit node-a's zone only", func(t *testing.T) {
		namedNamespace(t, client, "pvl")
		pv := pvlPV("hostpath-a", csiSource("hostpath.csi.k8s.io", "a"), nil, nil, "topology.hostpath.csi/node=node-a")
		pv.Spec.StorageClassName = "manual"
		if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		storageClass := "manual"
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &storageClass, VolumeName: "hostpath-a",
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
		if _, err := client.CoreV1().PersistentVolumeClaims("pvl").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		}}
		if _, err := client.CoreV1().Pods("pvl").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		fits := volumeZoneFits(t, client, "pvl", "app")
		if !fits["node-a"] || fits["node-b"] {
			t.Errorf("by the volume's zone labels the pod fits %v, want node-a only", fits)
		}
	})

	t.Run("a provisioner's service account creates a volume through a labelling webhook: labelled once, counted once", func(t *testing.T) {
		// The external provisioner's grant on volumes: create and get, nothing else.
		namedNamespace(t, client, "provisioner")
		if _, err := client.CoreV1().ServiceAccounts("provisioner").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "csi-provisioner"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pvl-provisioner"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"create", "get"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		const user = "system:serviceaccount:provisioner:csi-provisioner"
		if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pvl-provisioner"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pvl-provisioner"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "csi-provisioner", Namespace: "provisioner"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			review, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "persistentvolumes"}}}, metav1.CreateOptions{})
			return err == nil && review.Status.Allowed, nil
		}); err != nil {
			t.Fatalf("the authorizer never let %s create volumes: %v", user, err)
		}

		webhook := installLabeller(t, client, "", "v1", "persistentvolumes")
		webhook.waitCalled(t, func(ctx context.Context) error {
			_, err := client.CoreV1().PersistentVolumes().Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})

		// The first pass finds the zone by the Nodes; the server's second pass (the webhook
		// changed the volume) would find it by CSITopology, from the first pass's requirements.
		labelled := []string{
			`portcullis_persistentvolumelabel_volumes_total{outcome="labelled",resolver="Nodes"}`,
			`portcullis_persistentvolumelabel_volumes_total{outcome="labelled",resolver="CSITopology"}`,
		}
		count := func() float64 { return sampleValue(t, client, labelled[0]) + sampleValue(t, client, labelled[1]) }
		before := count()
		provisioner := impersonate(t, server, user)
		created, err := provisioner.CoreV1().PersistentVolumes().Create(ctx,
			pvlPV("hostpath-by-provisioner", csiSource("hostpath.csi.k8s.io", "p"), nil, nil, "topology.hostpath.csi/node=node-a"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantLabels := zoneRegion("zone-a", "region-1")
		wantLabels[labellerLabel] = "true"
		if diff := cmp.Diff(wantLabels, created.Labels); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		wantAffinity := requirementsOf("topology.hostpath.csi/node=node-a", corev1.LabelTopologyZone+"=zone-a", corev1.LabelTopologyRegion+"=region-1")
		if diff := cmp.Diff(wantAffinity, created.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions); diff != "" {
			t.Errorf("node affinity (-want +got):\n%s", diff)
		}
		if after := count(); after != before+1 {
			t.Errorf("the labelled volumes went from %v to %v, want one more: the server's second pass counted again", before, after)
		}
	})
}

// volumeZoneFits follows a pod's claims to their volumes as the scheduler's VolumeZone
// plugin does (pod → claim → spec.volumeName → PV) and reports, per Node, whether every
// zone or region label of the volumes (topology.kubernetes.io/* and the beta keys, a zone
// value split at "__") holds the Node's value for it, the Node's GA label standing in for a
// beta one.
func volumeZoneFits(t *testing.T, client kubernetes.Interface, namespace, podName string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	pod, err := client.CoreV1().Pods(namespace).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ga := map[string]string{corev1.LabelFailureDomainBetaZone: corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaRegion: corev1.LabelTopologyRegion}
	fits := map[string]bool{}
	for _, n := range nodes.Items {
		fits[n.Name] = true
	}
	labelsRead := 0
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv, err := client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion, corev1.LabelTopologyZone, corev1.LabelTopologyRegion} {
			value, ok := pv.Labels[key]
			if !ok {
				continue
			}
			labelsRead++
			allowed, err := volumehelpers.LabelZonesToSet(value)
			if err != nil {
				t.Fatalf("volume %s: label %s=%q: %v", pv.Name, key, value, err)
			}
			for _, n := range nodes.Items {
				nodeValue, ok := n.Labels[key]
				if !ok && ga[key] != "" {
					nodeValue, ok = n.Labels[ga[key]]
				}
				if !ok || !allowed.Has(nodeValue) {
					fits[n.Name] = false
				}
			}
		}
	}
	if labelsRead == 0 {
		t.Fatal("the pod's volumes carry no zone or region label")
	}
	return fits
}
