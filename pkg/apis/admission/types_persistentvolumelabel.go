package admission

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PersistentVolumeLabelResolverName names a way the PersistentVolumeLabel plugin finds a
// volume's zone and region without calling a cloud.
type PersistentVolumeLabelResolverName string

const (
	// PersistentVolumeLabelResolverCSITopology reads the zone from the PV's own node
	// affinity: the zone key of a CSI driver k8s.io/csi-translation-lib knows (GCE PD, AWS
	// EBS, Azure Disk, Cinder, vSphere), or topology.kubernetes.io/zone itself; the region
	// by that library's rules for the driver.
	PersistentVolumeLabelResolverCSITopology PersistentVolumeLabelResolverName = "CSITopology"
	// PersistentVolumeLabelResolverNodes reads the zone and region of the Nodes the PV's node
	// affinity selects (each key In [values] requirement): any CSI driver whose node plugin
	// labels nodes.
	PersistentVolumeLabelResolverNodes PersistentVolumeLabelResolverName = "Nodes"
	// PersistentVolumeLabelResolverVolumeID reads the location some volume identifiers
	// carry: an AWS EBS volume ID aws://<zone>/vol-…, a GCE PD name or CSI handle
	// projects/<project>/zones/<zone>/disks/<disk>.
	PersistentVolumeLabelResolverVolumeID PersistentVolumeLabelResolverName = "VolumeID"
	// PersistentVolumeLabelResolverRules applies the operator's rules (rules).
	PersistentVolumeLabelResolverRules PersistentVolumeLabelResolverName = "Rules"
)

// PersistentVolumeLabelKeys says which label keys the plugin writes.
type PersistentVolumeLabelKeys string

const (
	// PersistentVolumeLabelKeysGA writes topology.kubernetes.io/zone and .../region.
	PersistentVolumeLabelKeysGA PersistentVolumeLabelKeys = "GA"
	// PersistentVolumeLabelKeysBeta writes failure-domain.beta.kubernetes.io/zone and
	// .../region, for tools that still read only those.
	PersistentVolumeLabelKeysBeta PersistentVolumeLabelKeys = "Beta"
	// PersistentVolumeLabelKeysBoth writes both pairs.
	PersistentVolumeLabelKeysBoth PersistentVolumeLabelKeys = "Both"
)

// PersistentVolumeLabelNodeAffinity says what the plugin does to a labelled PV's node
// affinity.
type PersistentVolumeLabelNodeAffinity string

const (
	// PersistentVolumeLabelNodeAffinityAdd is upstream's rule: a key In [values]
	// requirement per label written is added to every term, unless any of those keys
	// already appears in any term (then nothing is added); one term is created when there
	// is none. A requirement the plugin infers (a CSI volume's place, the Nodes) is added
	// only when some Node carries it; one the volume states (an in-tree volume's identifier,
	// a provisioner's labels) always, with a warning when no Node carries it.
	PersistentVolumeLabelNodeAffinityAdd PersistentVolumeLabelNodeAffinity = "Add"
	// PersistentVolumeLabelNodeAffinityNone writes labels only.
	PersistentVolumeLabelNodeAffinityNone PersistentVolumeLabelNodeAffinity = "None"
)

// PersistentVolumeLabelUnresolved says what happens to an in-tree zonal volume (GCE PD, AWS
// EBS, Azure Disk, Cinder, vSphere volume) whose zone no resolver finds.
type PersistentVolumeLabelUnresolved string

const (
	// PersistentVolumeLabelUnresolvedAdmit admits it unlabelled.
	PersistentVolumeLabelUnresolvedAdmit PersistentVolumeLabelUnresolved = "Admit"
	// PersistentVolumeLabelUnresolvedRefuse refuses it (403), as a failed cloud lookup was.
	PersistentVolumeLabelUnresolvedRefuse PersistentVolumeLabelUnresolved = "Refuse"
)

// PersistentVolumeLabelSource names the volume source a rule applies to.
type PersistentVolumeLabelSource string

const (
	// The identifier is gcePersistentDisk.pdName.
	PersistentVolumeLabelSourceGCEPersistentDisk PersistentVolumeLabelSource = "GCEPersistentDisk"
	// The identifier is awsElasticBlockStore.volumeID.
	PersistentVolumeLabelSourceAWSElasticBlockStore PersistentVolumeLabelSource = "AWSElasticBlockStore"
	// The identifier is azureDisk.diskURI.
	PersistentVolumeLabelSourceAzureDisk PersistentVolumeLabelSource = "AzureDisk"
	// The identifier is cinder.volumeID.
	PersistentVolumeLabelSourceCinder PersistentVolumeLabelSource = "Cinder"
	// The identifier is vsphereVolume.volumePath.
	PersistentVolumeLabelSourceVsphereVolume PersistentVolumeLabelSource = "VsphereVolume"
	// The identifier is csi.volumeHandle; a rule may also name the driver.
	PersistentVolumeLabelSourceCSI PersistentVolumeLabelSource = "CSI"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PersistentVolumeLabelConfiguration configures the PersistentVolumeLabel admission plugin,
// which writes zone and region labels (and node affinity) on new PersistentVolumes from what
// the cluster already knows, in place of the cloud API upstream's plugin called.
type PersistentVolumeLabelConfiguration struct {
	metav1.TypeMeta

	// Resolvers are tried in order; the first to find a zone gives it, and the region comes
	// from the first that finds one for the same zones. Defaults to [CSITopology, Nodes,
	// VolumeID], and Rules after them when rules are given.
	Resolvers []PersistentVolumeLabelResolverName

	// LabelKeys is GA (default), Beta or Both.
	LabelKeys PersistentVolumeLabelKeys

	// NodeAffinity is Add (default, upstream's rule) or None.
	NodeAffinity PersistentVolumeLabelNodeAffinity

	// Rules are the operator's, tried in order by the Rules resolver; the first that matches
	// a volume gives its location.
	Rules []PersistentVolumeLabelRule

	// Unresolved is Admit (default) or Refuse: what happens to an in-tree zonal volume whose
	// zone no resolver finds.
	Unresolved PersistentVolumeLabelUnresolved
}

// PersistentVolumeLabelRule gives the location of the volumes whose identifier matches.
type PersistentVolumeLabelRule struct {
	// Source is the volume source the rule applies to: GCEPersistentDisk,
	// AWSElasticBlockStore, AzureDisk, Cinder, VsphereVolume or CSI.
	Source PersistentVolumeLabelSource

	// Driver, for a CSI rule, is the driver's name the volume must have; empty matches any.
	Driver string

	// Match is a regular expression (RE2) over the volume's identifier; empty matches
	// any.
	Match string

	// Zone is the volume's zone, or several joined by "__" for a regional volume. It may
	// use match's groups, as $1 or ${name}.
	Zone string

	// Region is the volume's region; it may use match's groups. Empty: none written.
	Region string
}
