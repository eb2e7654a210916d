package persistentvolumelabel

import (
	"bytes"
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// every resolver: the plugin admits or refuses (403), never panics, and writes only label
// values the server accepts.
func FuzzAdmit(f *testing.F) {
	f.Add("pd.csi.storage.gke.io", "projects/p/zones/us-central1-a/disks/d", "topology.gke.io/zone", "us-central1-a", "aws://us-east-1a/vol-0123456789abcdef0")
	f.Add("ebs.csi.aws.com", "aws://eu-west-1b/vol-01234567", "topology.ebs.csi.aws.com/zone", "eu-west-1b", "aws:///")
	f.Add("csi.vsphere.vmware.com", "h", "topology.csi.vmware.com/region", "r__s", "projects/p/regions/r/disks/d")
	f.Add("hostpath.csi.k8s.io", "h", "rack", "r1", "az-1-x")
	f.Add("", "", "topology.kubernetes.io/zone", "", "")
	p := newPlugin(f, "unresolved: Refuse\nrules:\n- source: CSI\n  match: '^(.*)/(.*)$'\n  zone: '$1'\n  region: '$2'\n- source: Cinder\n  match: '^(az-[0-9]+)'\n  zone: '$1'\n",
		clusterNodes...)
	f.Fuzz(func(t *testing.T, driver, handle, key, value, id string) {
		affinity := withTerms(term(in(key, value)), term(in(key, strings.Split(value, "__")...)))
		for _, pv := range []*api.PersistentVolume{
			newPV(csi(driver, handle), affinity),
			newPV(ebs(id), affinity),
			newPV(gcePD(id)),
			newPV(cinder(id), withLabels(gaZone, value, gaRegion, handle), provisioned),
		} {
			err := p.Admit(context.Background(), createAttributes(pv), nil)
			if err != nil && !apierrors.IsForbidden(err) {
				t.Fatalf("admitting %+v: %v, want nil or a 403", pv.Spec, err)
			}
			if err == nil && pv.Annotations == nil {
				for _, key := range []string{gaZone, gaRegion} {
					if errs := validation.IsValidLabelValue(pv.Labels[key]); len(errs) > 0 {
						t.Errorf("label %s=%q is no label value: %v", key, pv.Labels[key], errs)
					}
				}
			}
		}
	})
}
