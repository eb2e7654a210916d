package persistentvolumelabel

import (
	"regexp"
	"sort"

	"k8s.io/apimachinery/pkg/util/sets"
	volumehelpers "k8s.io/cloud-provider/volume/helpers"
	api "k8s.io/kubernetes/pkg/apis/core"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

// identifiers says, per source a rule may name, where a PV's identifier is; nil when the PV
// has no such source.
var identifiers = map[admissionv1alpha1.PersistentVolumeLabelSource]func(*api.PersistentVolumeSource) (id, driver string, ok bool){
	admissionv1alpha1.PersistentVolumeLabelSourceGCEPersistentDisk: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.GCEPersistentDisk == nil {
			return "", "", false
		}
		return s.GCEPersistentDisk.PDName, "", true
	},
	admissionv1alpha1.PersistentVolumeLabelSourceAWSElasticBlockStore: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.AWSElasticBlockStore == nil {
			return "", "", false
		}
		return s.AWSElasticBlockStore.VolumeID, "", true
	},
	admissionv1alpha1.PersistentVolumeLabelSourceAzureDisk: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.AzureDisk == nil {
			return "", "", false
		}
		return s.AzureDisk.DataDiskURI, "", true
	},
	admissionv1alpha1.PersistentVolumeLabelSourceCinder: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.Cinder == nil {
			return "", "", false
		}
		return s.Cinder.VolumeID, "", true
	},
	admissionv1alpha1.PersistentVolumeLabelSourceVsphereVolume: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.VsphereVolume == nil {
			return "", "", false
		}
		return s.VsphereVolume.VolumePath, "", true
	},
	admissionv1alpha1.PersistentVolumeLabelSourceCSI: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.CSI == nil {
			return "", "", false
		}
		return s.CSI.VolumeHandle, s.CSI.Driver, true
	},
}

func sourceNames() []string {
	names := make([]string, 0, len(identifiers))
	for s := range identifiers {
		names = append(names, string(s))
	}
	sort.Strings(names)
	return names
}

type compiledRule struct {
	rule  admissionv1alpha1.PersistentVolumeLabelRule
	match *regexp.Regexp
}

// rules applies the operator's rules: the first whose source, driver and expression match
// the PV gives its location, zone and region expanded from the expression's groups. A rule
// whose zone expands to nothing usable gives no zones (the region it gives still counts).
type rules []*compiledRule

func (rs rules) resolve(pv *api.PersistentVolume) location {
	for _, r := range rs {
		id, driver, ok := identifiers[r.rule.Source](&pv.Spec.PersistentVolumeSource)
		if !ok || (r.rule.Driver != "" && r.rule.Driver != driver) {
			continue
		}
		groups := r.match.FindStringSubmatchIndex(id)
		if groups == nil {
			continue
		}
		var loc location
		zone := string(r.match.ExpandString(nil, r.rule.Zone, id, groups))
		if zones, err := volumehelpers.LabelZonesToList(zone); err == nil && len(zones) > 0 {
			loc.zones = sets.New(zones...)
		}
		loc.region = string(r.match.ExpandString(nil, r.rule.Region, id, groups))
		return loc
	}
	return location{}
}
