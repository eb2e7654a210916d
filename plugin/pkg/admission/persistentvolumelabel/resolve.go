package persistentvolumelabel

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	cloudvolume "k8s.io/cloud-provider/volume"
	api "k8s.io/kubernetes/pkg/apis/core"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// location is what a resolver found of a volume's place: zones (several for a regional
// volume), a region, either or both.
type location struct {
	zones  sets.Set[string]
	region string
}

// resolver finds a volume's location from what the cluster knows; a zero location when it
// cannot.
type resolver interface {
	resolve(pv *api.PersistentVolume) location
}

// resolution is the merged answer of the resolvers, which one gave the zones, and whether
// the region is the Nodes' (regionOfZones).
type resolution struct {
	location
	by            portcullisapi.PersistentVolumeLabelResolverName
	regionByNodes bool
}

// resolve asks the resolvers in order: the first to find zones (an empty value is none)
// gives them; the region is the first found by a resolver that named no zones or the same
// zones (one that found other zones says nothing of this volume's region); failing that,
// with the Nodes resolver configured, the one region of the Nodes in those zones.
func resolve(resolvers []namedResolver, regionOfZones func(sets.Set[string]) string, pv *api.PersistentVolume) resolution {
	var r resolution
	var found []location
	for _, nr := range resolvers {
		loc := nr.resolve(pv)
		// An empty value is never a zone: Azure Disk's non-zonal topology is
		// topology.disk.csi.azure.com/zone In [""], which says the disk is in none.
		loc.zones.Delete("")
		found = append(found, loc)
		if r.zones == nil && loc.zones.Len() > 0 {
			r.zones, r.by = loc.zones, nr.name
		}
		if r.zones != nil {
			// Every answer before this one has been heard: the first that qualifies is final.
			for _, f := range found {
				if f.region != "" && (f.zones.Len() == 0 || f.zones.Equal(r.zones)) {
					r.region = f.region
					return r
				}
			}
		}
	}
	if r.zones != nil && regionOfZones != nil {
		r.region = regionOfZones(r.zones)
		r.regionByNodes = r.region != ""
	}
	return r
}

type namedResolver struct {
	name portcullisapi.PersistentVolumeLabelResolverName
	resolver
}

// inTreeZonalSource names the in-tree source of a volume whose zone a cloud lookup found in
// upstream's time, and its identifier; "" for other volumes.
func inTreeZonalSource(pv *api.PersistentVolume) (source, id string) {
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.GCEPersistentDisk != nil:
		source, id = "GCE PD", s.GCEPersistentDisk.PDName
	case s.AWSElasticBlockStore != nil:
		source, id = "AWS EBS", s.AWSElasticBlockStore.VolumeID
	case s.AzureDisk != nil:
		source, id = "Azure Disk", s.AzureDisk.DataDiskURI
	case s.Cinder != nil:
		source, id = "Cinder", s.Cinder.VolumeID
	case s.VsphereVolume != nil:
		source, id = "vSphere", s.VsphereVolume.VolumePath
	}
	return source, id
}

// isPlaceholder reports a volume a provisioner has not created yet: upstream skipped it.
func isPlaceholder(pv *api.PersistentVolume) bool {
	s := &pv.Spec.PersistentVolumeSource
	return (s.GCEPersistentDisk != nil && s.GCEPersistentDisk.PDName == cloudvolume.ProvisionedVolumeName) ||
		(s.AWSElasticBlockStore != nil && s.AWSElasticBlockStore.VolumeID == cloudvolume.ProvisionedVolumeName)
}

// affinityValues returns the values of every "key In [...]" requirement of the PV's node
// affinity, for any of keys.
func affinityValues(pv *api.PersistentVolume, keys ...string) []string {
	var values []string
	forEachRequirement(pv, func(req *api.NodeSelectorRequirement) {
		if req.Operator == api.NodeSelectorOpIn && slices.Contains(keys, req.Key) {
			values = append(values, req.Values...)
		}
	})
	return values
}

func forEachRequirement(pv *api.PersistentVolume, f func(*api.NodeSelectorRequirement)) {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil {
		return
	}
	for i := range na.Required.NodeSelectorTerms {
		for j := range na.Required.NodeSelectorTerms[i].MatchExpressions {
			f(&na.Required.NodeSelectorTerms[i].MatchExpressions[j])
		}
	}
}
