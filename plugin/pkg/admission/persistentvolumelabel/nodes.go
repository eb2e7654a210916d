package persistentvolumelabel

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// nodeLabelIndex indexes the node informer's Nodes by each "key=value" of their labels, so
// that the Nodes a requirement selects are one lookup, however many Nodes there are.
const nodeLabelIndex = "portcullis.io/persistentvolumelabel-node-labels"

func indexNodeLabels(obj interface{}) ([]string, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return nil, nil
	}
	keys := make([]string, 0, len(node.Labels))
	for k, v := range node.Labels {
		keys = append(keys, k+"="+v)
	}
	return keys, nil
}

// nodes reads the zone and region of the Nodes a PV's node affinity selects: any CSI driver
// whose node plugin labels its Nodes (a topology key, a host name) places its volumes there.
//
// The standard zone and region keys are left to the CSITopology resolver: they are the
// location itself, and the plugin's own requirements must not tell a second pass (after a
// webhook's change) more than the first knew. A "key In [values]" requirement determines
// zones when the Nodes labelled key=value, for each value, are all in one zone (values no
// Node carries add nothing); a term's zones are those its determining requirements agree on;
// the PV's, the union of its terms'. A term that nothing determines (it selects Nodes in
// several zones, or none) leaves the volume unresolved: it could be anywhere. The region is
// the one region of the Nodes counted.
type nodes struct {
	indexer cache.Indexer
}

func (n *nodes) resolve(pv *api.PersistentVolume) location {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil || len(na.Required.NodeSelectorTerms) == 0 {
		return location{}
	}
	zones, regions := sets.New[string](), sets.New[string]()
	for i := range na.Required.NodeSelectorTerms {
		var termZones sets.Set[string]
		for j := range na.Required.NodeSelectorTerms[i].MatchExpressions {
			req := &na.Required.NodeSelectorTerms[i].MatchExpressions[j]
			reqZones, reqRegions := n.requirementZones(req)
			if reqZones.Len() == 0 {
				continue
			}
			if termZones == nil {
				termZones = reqZones
			} else {
				termZones = termZones.Intersection(reqZones)
			}
			regions = regions.Union(reqRegions)
		}
		if termZones.Len() == 0 {
			return location{}
		}
		zones = zones.Union(termZones)
	}
	loc := location{zones: zones}
	if regions.Len() == 1 {
		loc.region = sets.List(regions)[0]
	}
	return loc
}

// requirementZones returns the zones and regions of the Nodes an In requirement selects;
// none when some value selects Nodes of several zones.
func (n nodes) requirementZones(req *api.NodeSelectorRequirement) (zones, regions sets.Set[string]) {
	if req.Operator != api.NodeSelectorOpIn || topologyKeys.Has(req.Key) {
		return nil, nil
	}
	zones, regions = sets.New[string](), sets.New[string]()
	for _, value := range req.Values {
		selected, err := n.indexer.ByIndex(nodeLabelIndex, req.Key+"="+value)
		if err != nil {
			return nil, nil
		}
		valueZone := ""
		for _, obj := range selected {
			node, isNode := obj.(*corev1.Node)
			if !isNode {
				continue
			}
			zone := labelOf(node.Labels, corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone)
			if zone == "" || (valueZone != "" && zone != valueZone) {
				return nil, nil
			}
			valueZone = zone
			if region := labelOf(node.Labels, corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion); region != "" {
				regions.Insert(region)
			}
		}
		if valueZone != "" {
			zones.Insert(valueZone)
		}
	}
	return zones, regions
}

// topologyKeys are the standard zone and region keys.
var topologyKeys = sets.New(corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone, corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion)

// regionOfZones is the one region of the Nodes in zones; "" when they have none or several.
func (n nodes) regionOfZones(zones sets.Set[string]) string {
	regions := sets.New[string]()
	for zone := range zones {
		for _, key := range []string{corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone} {
			selected, err := n.indexer.ByIndex(nodeLabelIndex, key+"="+zone)
			if err != nil {
				return ""
			}
			for _, obj := range selected {
				if node, ok := obj.(*corev1.Node); ok {
					if region := labelOf(node.Labels, corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion); region != "" {
						regions.Insert(region)
					}
				}
			}
		}
	}
	if regions.Len() != 1 {
		return ""
	}
	return sets.List(regions)[0]
}

// labelOf is the first of keys labels has.
func labelOf(labels map[string]string, keys ...string) string {
	for _, k := range keys {
		if v, ok := labels[k]; ok {
			return v
		}
	}
	return ""
}
