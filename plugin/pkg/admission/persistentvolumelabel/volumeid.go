package persistentvolumelabel

import (
	"net/url"
	"strings"

	csitranslationplugins "k8s.io/csi-translation-lib/plugins"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// volumeID reads the location the identifiers of some volumes carry: an AWS EBS volume ID
// aws://<zone>/vol-…, and a GCE PD disk path projects/<project>/zones/<zone>/disks/<disk>
// (or …/regions/<region>/…, a region only) as a pd.csi.storage.gke.io handle or a
// gcePersistentDisk pdName. The region is the library's rule for the driver.
type volumeID struct{}

func (volumeID) resolve(pv *api.PersistentVolume) location {
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.AWSElasticBlockStore != nil:
		return ebsLocation(s.AWSElasticBlockStore.VolumeID)
	case s.GCEPersistentDisk != nil:
		return gcePDLocation(s.GCEPersistentDisk.PDName)
	case s.CSI != nil && s.CSI.Driver == csitranslationplugins.AWSEBSDriverName:
		return ebsLocation(s.CSI.VolumeHandle)
	case s.CSI != nil && s.CSI.Driver == csitranslationplugins.GCEPDDriverName:
		return gcePDLocation(s.CSI.VolumeHandle)
	}
	return location{}
}

// ebsLocation reads aws://<zone>/vol-…, the in-tree plugin's URL form of a volume ID.
func ebsLocation(id string) location {
	if !strings.HasPrefix(id, "aws://") {
		return location{}
	}
	u, err := url.Parse(id)
	if err != nil || u.Host == "" {
		return location{}
	}
	// The library's own check that the rest is an EBS volume ID.
	if _, err := csitranslationplugins.KubernetesVolumeIDToEBSVolumeID(id); err != nil {
		return location{}
	}
	return zonalLocation(csitranslationplugins.AWSEBSDriverName, csitranslationplugins.AWSEBSTopologyKey, id, u.Host)
}

// gcePDLocation reads projects/<project>/zones/<zone>/disks/<disk> and
// projects/<project>/regions/<region>/disks/<disk>.
func gcePDLocation(id string) location {
	parts := strings.Split(id, "/")
	if len(parts) != 6 || parts[0] != "projects" || parts[4] != "disks" || parts[3] == "" || parts[3] == csitranslationplugins.UnspecifiedValue {
		return location{}
	}
	switch parts[2] {
	case "zones":
		return zonalLocation(csitranslationplugins.GCEPDDriverName, csitranslationplugins.GCEPDTopologyKey, id, parts[3])
	case "regions":
		return location{region: parts[3]}
	}
	return location{}
}
