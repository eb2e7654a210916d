package persistentvolumelabel

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	volumehelpers "k8s.io/cloud-provider/volume/helpers"
	csitranslation "k8s.io/csi-translation-lib"
	csitranslationplugins "k8s.io/csi-translation-lib/plugins"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
)

// csiTopology reads the zone from the PV's own node affinity. For a driver
// k8s.io/csi-translation-lib migrates (GCE PD, AWS EBS, Azure Disk, Cinder, vSphere) the
// library translates the PV as CSI migration's rollback does, and its labels are the
// location: the driver's zone key read as the zone, the region by the library's rule for the
// driver. Otherwise, and when that gives no zone, the standard zone and region keys are read
// from the affinity as written (and Azure Disk's zone key, whose topology the library leaves
// untranslated).
type csiTopology struct{}

var translator = csitranslation.New()

func (csiTopology) resolve(pv *api.PersistentVolume) location {
	csi := pv.Spec.CSI
	if csi != nil && pv.Spec.NodeAffinity != nil && translator.IsMigratedCSIDriverByName(csi.Driver) {
		affinity := &corev1.VolumeNodeAffinity{}
		if err := corev1conversion.Convert_core_VolumeNodeAffinity_To_v1_VolumeNodeAffinity(pv.Spec.NodeAffinity, affinity, nil); err == nil {
			if loc := translatedLocation(csi.Driver, csi.VolumeHandle, csi.VolumeAttributes, affinity); loc.zones.Len() > 0 {
				return loc
			}
		}
	}
	zoneKeys := []string{corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone}
	if csi != nil && csi.Driver == csitranslationplugins.AzureDiskDriverName {
		zoneKeys = append(zoneKeys, csitranslationplugins.AzureDiskTopologyKey)
	}
	loc := location{zones: sets.New(affinityValues(pv, zoneKeys...)...)}
	if regions := sets.New(affinityValues(pv, corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion)...); regions.Len() == 1 {
		loc.region = sets.List(regions)[0]
	}
	return loc
}

// translatedLocation is the location k8s.io/csi-translation-lib gives a PV of driver with
// handle, attributes and affinity, when it translates it to its in-tree source: the zone
// and region labels it writes, else the region key of the affinity it leaves (a driver
// without a region rule, as Cinder). A PV the library cannot translate has none.
func translatedLocation(driver, handle string, attributes map[string]string, affinity *corev1.VolumeNodeAffinity) location {
	inTree, err := translator.TranslateCSIPVToInTree(&corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: driver, VolumeHandle: handle, VolumeAttributes: attributes,
		}},
		NodeAffinity: affinity,
	}})
	if err != nil {
		return location{}
	}
	var loc location
	for _, key := range []string{corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone} {
		if value, ok := inTree.Labels[key]; ok {
			if zones, err := volumehelpers.LabelZonesToSet(value); err == nil {
				loc.zones = sets.New(zones.UnsortedList()...)
			}
			break
		}
	}
	for _, key := range []string{corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion} {
		if value, ok := inTree.Labels[key]; ok {
			loc.region = value
			return loc
		}
	}
	regions := sets.New[string]()
	if na := inTree.Spec.NodeAffinity; na != nil && na.Required != nil {
		for _, term := range na.Required.NodeSelectorTerms {
			for _, req := range term.MatchExpressions {
				if req.Operator == corev1.NodeSelectorOpIn && (req.Key == corev1.LabelTopologyRegion || req.Key == corev1.LabelFailureDomainBetaRegion) {
					regions.Insert(req.Values...)
				}
			}
		}
	}
	if regions.Len() == 1 {
		loc.region = sets.List(regions)[0]
	}
	return loc
}

// zonalLocation is the location of zone by the library's rule for driver's region, given
// the PV's handle (which the GCE PD translation parses).
func zonalLocation(driver, topologyKey, handle, zone string) location {
	loc := translatedLocation(driver, handle, nil, &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: topologyKey, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}},
		}}},
	}})
	if loc.zones.Len() == 0 {
		// The library refused the handle or the zone: the zone stands, without a region.
		loc = location{zones: sets.New(zone)}
	}
	return loc
}
