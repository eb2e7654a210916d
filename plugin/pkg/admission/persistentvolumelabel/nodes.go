package persistentvolumelabel

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
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

// csiTopologyKeyIndex indexes the CSINodes by the topology keys their drivers registered
// (spec.drivers[].topologyKeys): the keys a CSI driver's node plugin labels its Node with.
const csiTopologyKeyIndex = "portcullis.io/persistentvolumelabel-csi-topology-keys"

func indexCSITopologyKeys(obj interface{}) ([]string, error) {
	csiNode, ok := obj.(*storagev1.CSINode)
	if !ok {
		return nil, nil
	}
	keys := sets.New[string]()
	for _, d := range csiNode.Spec.Drivers {
		keys.Insert(d.TopologyKeys...)
	}
	return sets.List(keys), nil
}

// zoneCounts counts the Nodes by each "key=value" of their standard zone and region labels,
// so that whether any Node carries a requirement is one lookup, however many Nodes are in
// the zone. It is kept by the Node informer's events.
type zoneCounts struct {
	mu     sync.RWMutex
	counts map[string]int
}

func (c *zoneCounts) count(obj interface{}, delta int) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	for key := range topologyKeys {
		if v, ok := node.Labels[key]; ok {
			c.counts[key+"="+v] += delta
			if c.counts[key+"="+v] <= 0 {
				delete(c.counts, key+"="+v)
			}
		}
	}
}

func (c *zoneCounts) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.count(obj, 1)
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.count(oldObj, -1)
			c.count(newObj, 1)
		},
		DeleteFunc: func(obj interface{}) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.count(obj, -1)
		},
	}
}

// carried reports whether any Node is labelled key=value for one of values (key a standard
// zone or region key): a node-affinity requirement "key In values" that no Node carries
// would keep the volume's pods from every Node, for good (a PV's node affinity cannot be
// changed).
func (c *zoneCounts) carried(key string, values []string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, v := range values {
		if c.counts[key+"="+v] > 0 {
			return true
		}
	}
	return false
}

// nodes reads the zone and region of the Nodes a PV's node affinity selects by a key that
// says which host the volume is on or which part of the cluster it can reach: the Node's
// host name (kubernetes.io/hostname, a local volume's key) or a topology key a CSI driver
// registered in a CSINode (a host-path driver's topology.hostpath.csi/node, a block driver's
// zone key). Keys of any other kind (a node pool, kubernetes.io/os) say where some Nodes are
// today, not where the volume is, and are not read.
//
// The standard zone and region keys are left to the CSITopology resolver: they are the
// location itself, and the plugin's own requirements must not tell a second pass (after a
// webhook's change) more than the first knew. A "key In [values]" requirement determines
// zones when the Nodes labelled key=value, for each value, are all in one zone (values no
// Node carries add nothing, nor does an empty value: it names no place); a term's zones are
// those its determining requirements agree on; the PV's, the union of its terms'. A term
// that nothing determines (it selects Nodes in several zones, or none) leaves the volume
// unresolved: it could be anywhere. The region is the one region of the Nodes counted.
type nodes struct {
	indexer  cache.Indexer
	csiNodes cache.Indexer
}

// readable reports whether the resolver reads requirements on key.
func (n *nodes) readable(key string) bool {
	if topologyKeys.Has(key) {
		return false
	}
	if key == corev1.LabelHostname {
		return true
	}
	registered, err := n.csiNodes.ByIndex(csiTopologyKeyIndex, key)
	return err == nil && len(registered) > 0
}

// mayRead reports whether the resolver could read anything of pv's affinity, before the
// informers are asked: an In requirement with a value on a key that is not a standard one.
func mayRead(pv *api.PersistentVolume) bool {
	found := false
	forEachRequirement(pv, func(req *api.NodeSelectorRequirement) {
		if req.Operator != api.NodeSelectorOpIn || topologyKeys.Has(req.Key) {
			return
		}
		for _, v := range req.Values {
			found = found || v != ""
		}
	})
	return found
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

// requirementZones returns the zones and regions of the Nodes an In requirement on a
// readable key selects; none when some value selects Nodes of several zones.
func (n *nodes) requirementZones(req *api.NodeSelectorRequirement) (zones, regions sets.Set[string]) {
	if req.Operator != api.NodeSelectorOpIn || !n.readable(req.Key) {
		return nil, nil
	}
	zones, regions = sets.New[string](), sets.New[string]()
	for _, value := range req.Values {
		if value == "" {
			continue
		}
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
func (n *nodes) regionOfZones(zones sets.Set[string]) string {
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

// labelOf is the first non-empty value labels has of keys.
func labelOf(labels map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := labels[k]; v != "" {
			return v
		}
	}
	return ""
}
