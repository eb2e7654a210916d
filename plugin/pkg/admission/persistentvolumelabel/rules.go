package persistentvolumelabel

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/sets"
	volumehelpers "k8s.io/cloud-provider/volume/helpers"
	api "k8s.io/kubernetes/pkg/apis/core"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// identifiers says, per source a rule may name, where a PV's identifier is; nil when the PV
// has no such source.
var identifiers = map[portcullisapi.PersistentVolumeLabelSource]func(*api.PersistentVolumeSource) (id, driver string, ok bool){
	portcullisapi.PersistentVolumeLabelSourceGCEPersistentDisk: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.GCEPersistentDisk == nil {
			return "", "", false
		}
		return s.GCEPersistentDisk.PDName, "", true
	},
	portcullisapi.PersistentVolumeLabelSourceAWSElasticBlockStore: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.AWSElasticBlockStore == nil {
			return "", "", false
		}
		return s.AWSElasticBlockStore.VolumeID, "", true
	},
	portcullisapi.PersistentVolumeLabelSourceAzureDisk: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.AzureDisk == nil {
			return "", "", false
		}
		return s.AzureDisk.DataDiskURI, "", true
	},
	portcullisapi.PersistentVolumeLabelSourceCinder: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.Cinder == nil {
			return "", "", false
		}
		return s.Cinder.VolumeID, "", true
	},
	portcullisapi.PersistentVolumeLabelSourceVsphereVolume: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.VsphereVolume == nil {
			return "", "", false
		}
		return s.VsphereVolume.VolumePath, "", true
	},
	portcullisapi.PersistentVolumeLabelSourceCSI: func(s *api.PersistentVolumeSource) (string, string, bool) {
		if s.CSI == nil {
			return "", "", false
		}
		return s.CSI.VolumeHandle, s.CSI.Driver, true
	},
}

type compiledRule struct {
	rule  portcullisapi.PersistentVolumeLabelRule
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

// compileRules compiles the rules' expressions. Validation has checked them
// (pkg/apis/admission/validation); a rule that cannot be applied is still an error here, not
// a panic when a volume comes.
func compileRules(rs []portcullisapi.PersistentVolumeLabelRule) (rules, error) {
	compiled := make(rules, 0, len(rs))
	for i, rule := range rs {
		if _, ok := identifiers[rule.Source]; !ok {
			return nil, fmt.Errorf("rules[%d]: unknown source %q", i, rule.Source)
		}
		re, err := regexp.Compile(rule.Match)
		if err != nil {
			return nil, fmt.Errorf("rules[%d].match: %w", i, err)
		}
		compiled = append(compiled, &compiledRule{rule: rule, match: re})
	}
	return compiled, nil
}
