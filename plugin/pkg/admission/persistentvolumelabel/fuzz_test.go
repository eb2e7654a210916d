package persistentvolumelabel

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// Seeds are the tests' inputs; crashers Go finds are kept under testdata/fuzz/<target>.

// FuzzLoadConfiguration loads the plugin's configuration from the admission config file:
// an error names the plugin; a configuration loaded is valid, and a plugin can be built
// from it.
func FuzzLoadConfiguration(f *testing.F) {
	for _, seed := range []string{
		"",
		ExampleConfig,
		configHeader + "resolvers: [Rules, Nodes]\nrules:\n- source: CSI\n  driver: d\n  match: '^(?P<z>[a-z]+)/'\n  zone: '${z}__b'\n  region: r\n",
		configHeader + "labelKeys: Both\nnodeAffinity: None\nunresolved: Refuse\n",
		configHeader + "rules:\n- source: Cinder\n  match: '(['\n  zone: z\n",
		configHeader + "resolvers: []\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadConfiguration(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), PluginName+": ") {
				t.Errorf("the error does not name the plugin: %v", err)
			}
			return
		}
		if _, err := New(cfg); err != nil {
			t.Errorf("New refused a valid configuration: %v", err)
		}
	})
}

// FuzzAdmit admits PVs whose identifiers, driver and affinity come from the fuzzer through
// every resolver: the plugin admits or refuses (403), never panics; the zone and region it
// writes are label values naming a place (no empty zone, no empty region), and each
// requirement it adds names values of which some Node of the cluster carries one, or values
// the volume states itself (each part of an in-tree volume's identifier, or of the labels its
// provisioner set), as 1.30 added them. The properties are checked by the functions below, which share
// nothing with the plugin.
func FuzzAdmit(f *testing.F) {
	f.Add("pd.csi.storage.gke.io", "projects/p/zones/us-central1-a/disks/d", "topology.gke.io/zone", "us-central1-a", "aws://us-east-1a/vol-0123456789abcdef0")
	f.Add("ebs.csi.aws.com", "aws://eu-west-1b/vol-01234567", "topology.ebs.csi.aws.com/zone", "eu-west-1b", "aws:///")
	f.Add("csi.vsphere.vmware.com", "h", "topology.csi.vmware.com/region", "r__s", "projects/p/regions/r/disks/d")
	f.Add("hostpath.csi.k8s.io", "h", "rack", "r1", "az-1-x")
	f.Add("hostpath.csi.k8s.io", "h", "kubernetes.io/hostname", "node-a1", "aws://ap-south-1a/vol-0123456789abcdef0")
	f.Add("disk.csi.azure.com", "h", "topology.disk.csi.azure.com/zone", "", "")
	f.Add("", "", "topology.kubernetes.io/zone", "", "")
	f.Add("ebs.csi.aws.com", "vol-1", "topology.ebs.csi.aws.com/zone", "ap-south-1a", "az-7-x")
	p := newPlugin(f, "unresolved: Refuse\nrules:\n- source: CSI\n  match: '^(.*)/(.*)$'\n  zone: '$1'\n  region: '$2'\n- source: Cinder\n  match: '^(az-[0-9]+)'\n  zone: '$1'\n",
		clusterObjects...)
	f.Fuzz(func(t *testing.T, driver, handle, key, value, id string) {
		affinity := withTerms(term(in(key, value)), term(in(key, strings.Split(value, "__")...)))
		for _, pv := range []*api.PersistentVolume{
			newPV(csi(driver, handle), affinity),
			newPV(ebs(id), affinity),
			newPV(gcePD(id)),
			newPV(cinder(id)),
			newPV(cinder(id), withLabels(gaZone, value, gaRegion, handle), provisioned),
		} {
			before := pv.DeepCopy()
			err := p.Admit(context.Background(), createAttributes(pv), nil)
			if err != nil {
				if !apierrors.IsForbidden(err) {
					t.Fatalf("admitting %+v: %v, want nil or a 403", pv.Spec, err)
				}
				continue
			}
			if pv.Annotations == nil {
				if zone, ok := pv.Labels[gaZone]; ok {
					if problem := zoneLabelProblem(zone); problem != "" {
						t.Errorf("label %s=%q: %s", gaZone, zone, problem)
					}
				}
				if region, ok := pv.Labels[gaRegion]; ok {
					if errs := validation.IsValidLabelValue(region); region == "" || len(errs) > 0 {
						t.Errorf("label %s=%q is no region: %v", gaRegion, region, errs)
					}
				}
			}
			for _, req := range addedRequirements(before, pv) {
				if problem := requirementProblem(req, clusterObjects); problem != "" && !statedByVolume(req, before) {
					t.Errorf("requirement %s In %q added: %s, and the volume does not state it", req.Key, req.Values, problem)
				}
			}
		}
	})
}

// zoneLabelProblem reads a zone label's value as the scheduler's VolumeZone plugin does (one
// zone, or zones joined by "__") and says what is wrong with it: "" when nothing.
func zoneLabelProblem(value string) string {
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return "not a label value: " + strings.Join(errs, "; ")
	}
	for _, zone := range strings.Split(value, "__") {
		if strings.TrimSpace(zone) == "" {
			return "an empty zone"
		}
	}
	return ""
}

// addedRequirements are the requirements in after's terms beyond before's.
func addedRequirements(before, after *api.PersistentVolume) []api.NodeSelectorRequirement {
	var added []api.NodeSelectorRequirement
	if after.Spec.NodeAffinity == nil || after.Spec.NodeAffinity.Required == nil {
		return nil
	}
	for i, term := range after.Spec.NodeAffinity.Required.NodeSelectorTerms {
		had := 0
		if before.Spec.NodeAffinity != nil && before.Spec.NodeAffinity.Required != nil && i < len(before.Spec.NodeAffinity.Required.NodeSelectorTerms) {
			had = len(before.Spec.NodeAffinity.Required.NodeSelectorTerms[i].MatchExpressions)
		}
		added = append(added, term.MatchExpressions[had:]...)
	}
	return added
}

// statedByVolume reports whether every value of req is part of what the volume says of
// itself before admission: an in-tree volume's identifier (1.30 never located a CSI volume)
// or, provisioned, its labels.
func statedByVolume(req api.NodeSelectorRequirement, pv *api.PersistentVolume) bool {
	var stated []string
	s := pv.Spec.PersistentVolumeSource
	switch {
	case s.AWSElasticBlockStore != nil:
		stated = append(stated, s.AWSElasticBlockStore.VolumeID)
	case s.GCEPersistentDisk != nil:
		stated = append(stated, s.GCEPersistentDisk.PDName)
	case s.Cinder != nil:
		stated = append(stated, s.Cinder.VolumeID)
	}
	if _, ok := pv.Annotations["pv.kubernetes.io/provisioned-by"]; ok {
		for _, v := range pv.Labels {
			stated = append(stated, v)
		}
	}
	for _, v := range req.Values {
		if v == "" || !slices.ContainsFunc(stated, func(s string) bool { return strings.Contains(s, v) }) {
			return false
		}
	}
	return len(req.Values) > 0
}

// requirementProblem says what is wrong with a requirement added to a PV, given the cluster's
// objects: an empty value, or no Node labelled key=value for any of its values.
func requirementProblem(req api.NodeSelectorRequirement, objects []runtime.Object) string {
	if len(req.Values) == 0 {
		return "no values"
	}
	for _, v := range req.Values {
		if v == "" {
			return "an empty value"
		}
	}
	for _, obj := range objects {
		node, ok := obj.(*corev1.Node)
		if !ok {
			continue
		}
		if v, ok := node.Labels[req.Key]; ok && slices.Contains(req.Values, v) {
			return ""
		}
	}
	return "no Node carries it"
}
