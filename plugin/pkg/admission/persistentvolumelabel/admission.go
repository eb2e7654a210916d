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
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	cloudvolume "k8s.io/cloud-provider/volume"
	volumehelpers "k8s.io/cloud-provider/volume/helpers"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	persistentvolume "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
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
	cfg       *admissionv1alpha1.PersistentVolumeLabelConfiguration
	resolvers []namedResolver
	// zoneKeys and regionKeys are the label keys written, paired by index.
	zoneKeys, regionKeys []string

	// nodes is the Nodes resolver, when configured; its indexer comes with the informers.
	nodes        *nodes
	nodesSynced  func() bool
	nodesErr     error
	readyTimeout time.Duration
}

var (
	_ admission.MutationInterface                           = &Plugin{}
	_ admission.InitializationValidator                     = &Plugin{}
	_ genericadmissioninit.WantsExternalKubeInformerFactory = &Plugin{}
)

// New returns the plugin for a defaulted, validated configuration.
func New(cfg *admissionv1alpha1.PersistentVolumeLabelConfiguration) (*Plugin, error) {
	registerOnce.Do(func() { legacyregistry.MustRegister(volumesAdmitted) })
	p := &Plugin{
		// Upstream labelled a PV when it was created; an update keeps what it was given.
		Handler:      admission.NewHandler(admission.Create),
		cfg:          cfg,
		readyTimeout: readiness.DefaultTimeout,
	}
	switch cfg.LabelKeys {
	case admissionv1alpha1.PersistentVolumeLabelKeysGA:
		p.zoneKeys, p.regionKeys = []string{corev1.LabelTopologyZone}, []string{corev1.LabelTopologyRegion}
	case admissionv1alpha1.PersistentVolumeLabelKeysBeta:
		p.zoneKeys, p.regionKeys = []string{corev1.LabelFailureDomainBetaZone}, []string{corev1.LabelFailureDomainBetaRegion}
	default:
		p.zoneKeys = []string{corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone}
		p.regionKeys = []string{corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion}
	}
	for _, name := range cfg.Resolvers {
		var r resolver
		switch name {
		case admissionv1alpha1.PersistentVolumeLabelResolverCSITopology:
			r = csiTopology{}
		case admissionv1alpha1.PersistentVolumeLabelResolverNodes:
			p.nodes = &nodes{}
			r = p.nodes
		case admissionv1alpha1.PersistentVolumeLabelResolverVolumeID:
			r = volumeID{}
		case admissionv1alpha1.PersistentVolumeLabelResolverRules:
			var compiled rules
			for i, rule := range cfg.Rules {
				c, errs := compileRule(rule, field.NewPath("rules").Index(i))
				if len(errs) > 0 {
					return nil, fmt.Errorf("%s: %w", PluginName, errs.ToAggregate())
				}
				compiled = append(compiled, c)
			}
			r = compiled
		default:
			return nil, fmt.Errorf("%s: unknown resolver %q", PluginName, name)
		}
		p.resolvers = append(p.resolvers, namedResolver{name: name, resolver: r})
	}
	return p, nil
}

// SetExternalKubeInformerFactory receives the informers: the Nodes resolver indexes the
// Nodes by label.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	if p.nodes == nil {
		return
	}
	informer := f.Core().V1().Nodes().Informer()
	if err := informer.AddIndexers(cache.Indexers{nodeLabelIndex: indexNodeLabels}); err != nil {
		p.nodesErr = err
		return
	}
	p.nodes.indexer, p.nodesSynced = informer.GetIndexer(), informer.HasSynced
}

// ValidateInitialization checks the Nodes resolver got its Nodes.
func (p *Plugin) ValidateInitialization() error {
	if p.nodesErr != nil {
		return fmt.Errorf("%s: indexing the Nodes: %w", PluginName, p.nodesErr)
	}
	if p.nodes != nil && p.nodes.indexer == nil {
		return fmt.Errorf("%s: missing Node informer", PluginName)
	}
	return nil
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
	if trustedZone, trustedRegion, key, trusted := provisionedLabels(pv); trusted {
		set, err := volumehelpers.LabelZonesToSet(trustedZone)
		if err != nil {
			return admission.NewForbidden(a, fmt.Errorf("failed to convert label string for Zone: %s to a Set", trustedZone))
		}
		zones, zoneValue, region = set.List(), trustedZone, trustedRegion
		zoneKeys, regionKeys = []string{key.zone}, []string{key.region}
		volumesAdmitted.WithLabelValues(outcomeTrusted, "").Inc()
	} else {
		if p.nodes != nil && !readiness.Wait(ctx, p.nodesSynced, p.readyTimeout) {
			return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request: the Nodes are not listed yet"))
		}
		var regionOfZones func(sets.Set[string]) string
		if p.nodes != nil {
			regionOfZones = p.nodes.regionOfZones
		}
		found := resolve(p.resolvers, regionOfZones, pv)
		zones, region = sets.List(found.zones), found.region
		zoneValue = strings.Join(zones, cloudvolume.LabelMultiZoneDelimiter)
		if msg := invalidLocation(zoneValue, region); msg != "" {
			klog.V(2).InfoS("PersistentVolumeLabel: ignoring a location that is no label value", "pv", pv.Name, "resolver", found.by, "problem", msg)
			zones, zoneValue, region = nil, "", ""
		}
		if len(zones) == 0 {
			source, id := inTreeZonalSource(pv)
			if source != "" && p.cfg.Unresolved == admissionv1alpha1.PersistentVolumeLabelUnresolvedRefuse {
				volumesAdmitted.WithLabelValues(outcomeRefused, "").Inc()
				return admission.NewForbidden(a, fmt.Errorf("%s: no zone found for %s volume %s by the resolvers %v", PluginName, source, id, p.cfg.Resolvers))
			}
			volumesAdmitted.WithLabelValues(outcomeUnresolved, "").Inc()
			return nil
		}
		volumesAdmitted.WithLabelValues(outcomeLabelled, string(found.by)).Inc()
	}
	p.label(pv, zoneKeys, regionKeys, zoneValue, zones, region)
	return nil
}

// label writes the labels (the zone label's value is zoneValue: a provisioner's is kept as
// written) and, by the node-affinity policy, the requirements.
func (p *Plugin) label(pv *api.PersistentVolume, zoneKeys, regionKeys []string, zoneValue string, zones []string, region string) {
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
	if p.cfg.NodeAffinity == admissionv1alpha1.PersistentVolumeLabelNodeAffinityNone {
		return
	}
	addRequirements(pv, reqs)
}

// addRequirements is upstream's rule: every requirement goes into every term, unless any of
// their keys already appears in any term (then none is added: the PV's own affinity says
// where it is); a PV without a term gets one.
func addRequirements(pv *api.PersistentVolume, reqs []api.NodeSelectorRequirement) {
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
	conflict := false
	forEachRequirement(pv, func(existing *api.NodeSelectorRequirement) {
		for _, req := range reqs {
			conflict = conflict || existing.Key == req.Key
		}
	})
	if conflict {
		klog.V(4).InfoS("PersistentVolumeLabel: the PV's node affinity already has a topology key; none added", "pv", pv.Name)
		return
	}
	for i := range terms {
		for _, req := range reqs {
			// Each term its own copy of the values.
			req.Values = append([]string(nil), req.Values...)
			terms[i].MatchExpressions = append(terms[i].MatchExpressions, req)
		}
	}
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
