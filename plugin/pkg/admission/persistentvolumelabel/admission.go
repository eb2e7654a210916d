// Package persistentvolumelabel is the PersistentVolumeLabel admission plugin without a
// cloud API: a new PersistentVolume gets zone and region labels, and node affinity to match,
// as upstream's plugin gave them until 1.30, found from what the cluster already knows (the
// PV's CSI topology, the Nodes it selects, the location its volume ID carries, the
// operator's rules) instead of from a cloud provider.
package persistentvolumelabel

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	cloudvolume "k8s.io/cloud-provider/volume"
	volumehelpers "k8s.io/cloud-provider/volume/helpers"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	persistentvolume "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/internal/readiness"
)

// PluginName is the name of the plugin, as upstream's.
const PluginName = "PersistentVolumeLabel"

// Register registers the plugin with its configuration from the admission config file.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(r io.Reader) (admission.Interface, error) {
		cfg, err := LoadConfiguration(r)
		if err != nil {
			return nil, err
		}
		return New(cfg)
	})
}

// The outcomes the volumes counter records.
const (
	outcomeLabelled   = "labelled"
	outcomeTrusted    = "trusted"
	outcomeUnresolved = "unresolved"
	outcomeRefused    = "refused"
)

var (
	volumesAdmitted = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "portcullis", Subsystem: "persistentvolumelabel", Name: "volumes_total",
		Help: "PersistentVolumes PersistentVolumeLabel looked at, by outcome (labelled, trusted: a provisioner's labels kept, " +
			"unresolved: admitted unlabelled, refused) and the resolver that found the zones.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"outcome", "resolver"})
	registerOnce sync.Once
)

// Plugin is the PersistentVolumeLabel admission plugin.
type Plugin struct {
	*admission.Handler
	cfg       *portcullisapi.PersistentVolumeLabelConfiguration
	resolvers []namedResolver
	// zoneKeys and regionKeys are the label keys written, paired by index.
	zoneKeys, regionKeys []string

	// nodes is the Nodes resolver, when configured; its indexers come with the informers.
	nodes *nodes
	// nodeIndex is the Nodes by label and zones counts them by zone and region, with the
	// Nodes resolver or nodeAffinity Add: a requirement on a standard key the plugin infers
	// from the cluster is added only when a Node carries it.
	nodeIndex      cache.Indexer
	zones          *zoneCounts
	nodesSynced    func() bool
	csiNodesSynced func() bool
	informerErr    error
	readyTimeout   time.Duration
}

var (
	_ admission.MutationInterface                           = &Plugin{}
	_ admission.InitializationValidator                     = &Plugin{}
	_ genericadmissioninit.WantsExternalKubeInformerFactory = &Plugin{}
)

// New returns the plugin for a defaulted, validated configuration.
func New(cfg *portcullisapi.PersistentVolumeLabelConfiguration) (*Plugin, error) {
	registerOnce.Do(func() { legacyregistry.MustRegister(volumesAdmitted) })
	p := &Plugin{
		// Upstream labelled a PV when it was created; an update keeps what it was given.
		Handler:      admission.NewHandler(admission.Create),
		cfg:          cfg,
		readyTimeout: readiness.DefaultTimeout,
	}
	switch cfg.LabelKeys {
	case portcullisapi.PersistentVolumeLabelKeysGA:
		p.zoneKeys, p.regionKeys = []string{corev1.LabelTopologyZone}, []string{corev1.LabelTopologyRegion}
	case portcullisapi.PersistentVolumeLabelKeysBeta:
		p.zoneKeys, p.regionKeys = []string{corev1.LabelFailureDomainBetaZone}, []string{corev1.LabelFailureDomainBetaRegion}
	default:
		p.zoneKeys = []string{corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone}
		p.regionKeys = []string{corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion}
	}
	for _, name := range cfg.Resolvers {
		var r resolver
		switch name {
		case portcullisapi.PersistentVolumeLabelResolverCSITopology:
			r = csiTopology{}
		case portcullisapi.PersistentVolumeLabelResolverNodes:
			p.nodes = &nodes{}
			r = p.nodes
		case portcullisapi.PersistentVolumeLabelResolverVolumeID:
			r = volumeID{}
		case portcullisapi.PersistentVolumeLabelResolverRules:
			compiled, err := compileRules(cfg.Rules)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", PluginName, err)
			}
			r = compiled
		default:
			return nil, fmt.Errorf("%s: unknown resolver %q", PluginName, name)
		}
		p.resolvers = append(p.resolvers, namedResolver{name: name, resolver: r})
	}
	return p, nil
}

// wantsNodes reports whether the plugin reads the Nodes: the Nodes resolver does, and
// adding node affinity does (an inferred requirement no Node carries is not added; a stated
// one is added with a warning).
func (p *Plugin) wantsNodes() bool {
	return p.nodes != nil || p.cfg.NodeAffinity == portcullisapi.PersistentVolumeLabelNodeAffinityAdd
}

// SetExternalKubeInformerFactory receives the informers: the Nodes indexed by label, and,
// for the Nodes resolver, the CSINodes by the topology keys their drivers registered.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	if !p.wantsNodes() {
		return
	}
	informer := f.Core().V1().Nodes().Informer()
	if err := informer.AddIndexers(cache.Indexers{nodeLabelIndex: indexNodeLabels}); err != nil {
		p.informerErr = fmt.Errorf("indexing the Nodes: %w", err)
		return
	}
	p.zones = &zoneCounts{counts: map[string]int{}}
	registration, err := informer.AddEventHandler(p.zones.handler())
	if err != nil {
		p.informerErr = fmt.Errorf("counting the Nodes: %w", err)
		return
	}
	// Listed: the informer has the Nodes, and the counts have had every one of them.
	p.nodeIndex = informer.GetIndexer()
	p.nodesSynced = func() bool { return informer.HasSynced() && registration.HasSynced() }
	if p.nodes == nil {
		return
	}
	csiInformer := f.Storage().V1().CSINodes().Informer()
	if err := csiInformer.AddIndexers(cache.Indexers{csiTopologyKeyIndex: indexCSITopologyKeys}); err != nil {
		p.informerErr = fmt.Errorf("indexing the CSINodes: %w", err)
		return
	}
	p.nodes.indexer, p.nodes.csiNodes, p.csiNodesSynced = p.nodeIndex, csiInformer.GetIndexer(), csiInformer.HasSynced
}

// ValidateInitialization checks the plugin got the informers it reads.
func (p *Plugin) ValidateInitialization() error {
	if p.informerErr != nil {
		return fmt.Errorf("%s: %w", PluginName, p.informerErr)
	}
	if p.wantsNodes() && p.nodeIndex == nil {
		return fmt.Errorf("%s: missing Node informer", PluginName)
	}
	if p.nodes != nil && p.nodes.csiNodes == nil {
		return fmt.Errorf("%s: missing CSINode informer", PluginName)
	}
	return nil
}

// nodesResolverSynced reports whether the Nodes resolver has both its lists.
func (p *Plugin) nodesResolverSynced() bool {
	return p.nodesSynced() && p.csiNodesSynced()
}

func notReady(a admission.Attributes, what string) error {
	return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request: %s", what))
}

// count records an outcome once per request: not again when a webhook's change makes the
// server run the plugin a second time. Dry runs count: they are admitted as any request.
func count(a admission.Attributes, outcome string, by portcullisapi.PersistentVolumeLabelResolverName) {
	if rc := a.GetReinvocationContext(); rc != nil && rc.IsReinvoke() {
		return
	}
	volumesAdmitted.WithLabelValues(outcome, string(by)).Inc()
}

// Admit labels a new PersistentVolume with its zone and region and adds node affinity for
// them, by upstream's rules: a provisioner's labels are trusted; otherwise the labels are
// found and written over the user's (the keys are Kubernetes's own).
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != api.Resource("persistentvolumes") || a.GetSubresource() != "" {
		return nil
	}
	pv, ok := a.GetObject().(*api.PersistentVolume)
	if !ok || isPlaceholder(pv) {
		return nil
	}
	zoneKeys, regionKeys := p.zoneKeys, p.regionKeys
	var zones []string
	var zoneValue, region string
	outcome, by := outcomeTrusted, portcullisapi.PersistentVolumeLabelResolverName("")
	// Where the volume says where it is (a provisioner's labels; an in-tree volume's
	// identifier, read by VolumeID or an operator's rule, standing in for 1.30's cloud lookup),
	// its requirements are added as 1.30 added them. What the plugin infers (a CSI volume's
	// place, which 1.30 never labelled; a region from the Nodes) only when some Node carries it.
	stated := true
	var regionByNodes bool
	if trustedZone, trustedRegion, key, trusted := provisionedLabels(pv); trusted {
		set, err := volumehelpers.LabelZonesToSet(trustedZone)
		if err != nil {
			return admission.NewForbidden(a, fmt.Errorf("failed to convert label string for Zone: %s to a Set", trustedZone))
		}
		zones, zoneValue, region = set.List(), trustedZone, trustedRegion
		zoneKeys, regionKeys = []string{key.zone}, []string{key.region}
	} else {
		// Only a volume whose affinity the Nodes resolver could read waits for its lists: an
		// NFS or host-path volume without affinity has nothing to wait for.
		if p.nodes != nil && mayRead(pv) && !readiness.Wait(ctx, p.nodesResolverSynced, p.readyTimeout) {
			return notReady(a, "the Nodes and CSINodes are not listed yet")
		}
		var regionOfZones func(sets.Set[string]) string
		nodesListed := true
		if p.nodes != nil {
			// A volume the Nodes resolver could not read may still take its region from the
			// Nodes: then it waits for their list too.
			regionOfZones = func(zones sets.Set[string]) string {
				if nodesListed = readiness.Wait(ctx, p.nodesSynced, p.readyTimeout); !nodesListed {
					return ""
				}
				return p.nodes.regionOfZones(zones)
			}
		}
		found := resolve(p.resolvers, regionOfZones, pv)
		if !nodesListed {
			return notReady(a, "the Nodes are not listed yet")
		}
		zones, region = sets.List(found.zones), found.region
		zoneValue = strings.Join(zones, cloudvolume.LabelMultiZoneDelimiter)
		if msg := invalidLocation(zoneValue, region); msg != "" {
			klog.V(2).InfoS("PersistentVolumeLabel: ignoring a location that is no label value", "pv", pv.Name, "resolver", found.by, "problem", msg)
			zones, zoneValue, region = nil, "", ""
		}
		if len(zones) == 0 {
			source, id := inTreeZonalSource(pv)
			if source != "" && p.cfg.Unresolved == portcullisapi.PersistentVolumeLabelUnresolvedRefuse {
				count(a, outcomeRefused, "")
				return admission.NewForbidden(a, fmt.Errorf("%s: no zone found for %s volume %s by the resolvers %v", PluginName, source, id, p.cfg.Resolvers))
			}
			count(a, outcomeUnresolved, "")
			return nil
		}
		outcome, by = outcomeLabelled, found.by
		stated = readFromIdentifier(found.by) && inTreeVolume(pv)
		regionByNodes = found.regionByNodes
	}
	reqs := p.label(pv, zoneKeys, regionKeys, zoneValue, zones, region)
	if len(reqs) > 0 && !affinityHasKeyOf(pv, reqs) {
		if !stated || regionByNodes {
			if !readiness.Wait(ctx, p.nodesSynced, p.readyTimeout) {
				return notReady(a, "the Nodes are not listed yet")
			}
			reqs = p.carriedRequirements(pv, reqs, func(req api.NodeSelectorRequirement) bool {
				return !stated || slices.Contains(regionKeys, req.Key)
			})
		}
		p.warnUncarried(ctx, pv, reqs)
		addRequirements(pv, reqs)
	}
	count(a, outcome, by)
	return nil
}

// label writes the labels (the zone label's value is zoneValue: a provisioner's is kept as
// written) and returns the requirements to add by the node-affinity policy: none for an
// empty region (no region) or with nodeAffinity None.
func (p *Plugin) label(pv *api.PersistentVolume, zoneKeys, regionKeys []string, zoneValue string, zones []string, region string) []api.NodeSelectorRequirement {
	if pv.Labels == nil {
		pv.Labels = map[string]string{}
	}
	var reqs []api.NodeSelectorRequirement
	for i := range zoneKeys {
		pv.Labels[zoneKeys[i]] = zoneValue
		reqs = append(reqs, api.NodeSelectorRequirement{Key: zoneKeys[i], Operator: api.NodeSelectorOpIn, Values: zones})
		if region != "" {
			pv.Labels[regionKeys[i]] = region
			reqs = append(reqs, api.NodeSelectorRequirement{Key: regionKeys[i], Operator: api.NodeSelectorOpIn, Values: []string{region}})
		}
	}
	if p.cfg.NodeAffinity == portcullisapi.PersistentVolumeLabelNodeAffinityNone {
		return nil
	}
	return reqs
}

// readFromIdentifier reports whether resolver by reads a volume's location from its
// identifier (VolumeID, or an operator's rule for identifiers), as 1.30's cloud lookup did for
// in-tree volumes, rather than inferring it from the cluster (a CSI driver's topology, the
// Nodes).
func readFromIdentifier(by portcullisapi.PersistentVolumeLabelResolverName) bool {
	return by == portcullisapi.PersistentVolumeLabelResolverVolumeID || by == portcullisapi.PersistentVolumeLabelResolverRules
}

// inTreeVolume reports whether pv is of an in-tree zonal source, the volumes 1.30 located.
func inTreeVolume(pv *api.PersistentVolume) bool {
	source, _ := inTreeZonalSource(pv)
	return source != ""
}

// carriedRequirements returns reqs less those checked that no Node carries (a Node labelled
// key=value for one of its values): an inferred requirement no Node carries would keep the
// volume's pods from every Node, and a PV's affinity cannot be changed later (its labels can).
func (p *Plugin) carriedRequirements(pv *api.PersistentVolume, reqs []api.NodeSelectorRequirement, checked func(api.NodeSelectorRequirement) bool) []api.NodeSelectorRequirement {
	var held []api.NodeSelectorRequirement
	for _, req := range reqs {
		if !checked(req) || p.zones.carried(req.Key, req.Values) {
			held = append(held, req)
		} else {
			klog.V(2).InfoS("PersistentVolumeLabel: no Node carries the requirement; not added", "pv", pv.Name, "key", req.Key, "values", req.Values)
		}
	}
	return held
}

// warnUncarried tells the creator of each requirement added that no Node carries yet (a
// stated one, added as 1.30 added it): the volume's pods stay Pending until such a Node
// joins, and a mistaken rule or label is best seen now, while the PV can still be recreated.
// Without the Node list (the server starting) it says nothing rather than wait.
func (p *Plugin) warnUncarried(ctx context.Context, pv *api.PersistentVolume, reqs []api.NodeSelectorRequirement) {
	if p.zones == nil || !p.nodesSynced() {
		return
	}
	for _, req := range reqs {
		if !p.zones.carried(req.Key, req.Values) {
			klog.InfoS("PersistentVolumeLabel: no Node carries a requirement the volume states; added as upstream added it", "pv", pv.Name, "key", req.Key, "values", req.Values)
			warning.AddWarning(ctx, "", fmt.Sprintf("%s: no Node is labelled %s in %q yet: pods using PersistentVolume %s stay Pending until one is", PluginName, req.Key, req.Values, pv.Name))
		}
	}
}

// addRequirements is upstream's rule: every requirement goes into every term, unless any of
// the requirements' keys already appears in any term (the caller checks: then none is added,
// the PV's own affinity says where it is); a PV without a term gets one when there is a
// requirement to add.
func addRequirements(pv *api.PersistentVolume, reqs []api.NodeSelectorRequirement) {
	if len(reqs) == 0 {
		return
	}
	if pv.Spec.NodeAffinity == nil {
		pv.Spec.NodeAffinity = &api.VolumeNodeAffinity{}
	}
	if pv.Spec.NodeAffinity.Required == nil {
		pv.Spec.NodeAffinity.Required = &api.NodeSelector{}
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	if len(terms) == 0 {
		terms = make([]api.NodeSelectorTerm, 1)
		pv.Spec.NodeAffinity.Required.NodeSelectorTerms = terms
	}
	for i := range terms {
		for _, req := range reqs {
			// Each term its own copy of the values.
			req.Values = append([]string(nil), req.Values...)
			terms[i].MatchExpressions = append(terms[i].MatchExpressions, req)
		}
	}
}

// affinityHasKeyOf reports whether any term of pv's node affinity has a key of reqs: then
// none of them is added.
func affinityHasKeyOf(pv *api.PersistentVolume, reqs []api.NodeSelectorRequirement) bool {
	conflict := false
	forEachRequirement(pv, func(existing *api.NodeSelectorRequirement) {
		for _, req := range reqs {
			conflict = conflict || existing.Key == req.Key
		}
	})
	if conflict {
		klog.V(4).InfoS("PersistentVolumeLabel: the PV's node affinity already has a topology key; none added", "pv", pv.Name)
	}
	return conflict
}

type keyPair struct{ zone, region string }

// provisionedLabels returns the zone and region labels of a dynamically provisioned PV
// that carries both (the GA pair, else the beta pair): upstream trusted its provisioner.
func provisionedLabels(pv *api.PersistentVolume) (zone, region string, keys keyPair, ok bool) {
	if !metav1.HasAnnotation(pv.ObjectMeta, persistentvolume.AnnDynamicallyProvisioned) {
		return "", "", keyPair{}, false
	}
	for _, k := range []keyPair{
		{corev1.LabelTopologyZone, corev1.LabelTopologyRegion},
		{corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion},
	} {
		zone, zoneOK := pv.Labels[k.zone]
		region, regionOK := pv.Labels[k.region]
		if zoneOK && regionOK {
			return zone, region, k, true
		}
	}
	return "", "", keyPair{}, false
}

// invalidLocation says why the zone label value (the sorted zones, joined) and region cannot
// be written as label values ("" when they can): a resolver's answer comes from affinity
// values, node labels or the operator's expansions, and a PV the server would then refuse
// for its labels helps nobody.
func invalidLocation(zoneValue, region string) string {
	if zoneValue == "" {
		return ""
	}
	for _, v := range []string{zoneValue, region} {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Sprintf("%q: %s", v, strings.Join(errs, "; "))
		}
	}
	return ""
}
