package policy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// Annotation keys a PodSecurityPolicy reads for seccomp and AppArmor profiles. They are
// the keys Kubernetes 1.24 used, so existing policies keep their meaning.
const (
	// SeccompAllowedProfilesAnnotationKey lists the seccomp profiles pods may use, comma
	// separated; "*" allows any profile.
	SeccompAllowedProfilesAnnotationKey = "seccomp.security.alpha.kubernetes.io/allowedProfileNames"
	// SeccompDefaultProfileAnnotationKey names the seccomp profile applied to pods that
	// set none.
	SeccompDefaultProfileAnnotationKey = "seccomp.security.alpha.kubernetes.io/defaultProfileName"
	// AppArmorAllowedProfilesAnnotationKey lists the AppArmor profiles containers may use,
	// comma separated.
	AppArmorAllowedProfilesAnnotationKey = "apparmor.security.beta.kubernetes.io/allowedProfileNames"
	// AppArmorDefaultProfileAnnotationKey names the AppArmor profile applied to containers
	// that set none.
	AppArmorDefaultProfileAnnotationKey = "apparmor.security.beta.kubernetes.io/defaultProfileName"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodSecurityPolicy is a cluster-scoped set of conditions a pod's security-relevant
// settings must meet to be admitted, and defaults applied to the pods it admits.
type PodSecurityPolicy struct {
	metav1.TypeMeta
	// +optional
	metav1.ObjectMeta

	// Spec is the policy itself.
	// +optional
	Spec PodSecurityPolicySpec
}

// PodSecurityPolicySpec is what a PodSecurityPolicy allows, requires and defaults.
type PodSecurityPolicySpec struct {
	// Privileged allows containers to run privileged.
	// +optional
	Privileged bool
	// DefaultAddCapabilities are added to every container unless the container drops them
	// explicitly. They are implicitly allowed; none may also be in RequiredDropCapabilities.
	// +optional
	DefaultAddCapabilities []api.Capability
	// RequiredDropCapabilities are dropped from every container and may not be added.
	// +optional
	RequiredDropCapabilities []api.Capability
	// AllowedCapabilities may be added by a container; "*" allows any. None may also be in
	// RequiredDropCapabilities.
	// +optional
	AllowedCapabilities []api.Capability
	// Volumes lists the volume kinds pods may use; empty allows none, "*" allows all.
	// +optional
	Volumes []FSType
	// HostNetwork allows pods to use the host's network namespace.
	// +optional
	HostNetwork bool
	// HostPorts lists the host port ranges containers may expose.
	// +optional
	HostPorts []HostPortRange
	// HostPID allows pods to use the host's PID namespace.
	// +optional
	HostPID bool
	// HostIPC allows pods to use the host's IPC namespace.
	// +optional
	HostIPC bool
	// SELinux constrains and defaults the SELinux labels of pods and containers.
	SELinux SELinuxStrategyOptions
	// RunAsUser constrains and defaults the UIDs pods and containers run as.
	RunAsUser RunAsUserStrategyOptions
	// RunAsGroup constrains and defaults the primary GIDs; nil leaves them unrestricted.
	// +optional
	RunAsGroup *RunAsGroupStrategyOptions
	// SupplementalGroups constrains and defaults the pod's supplemental groups.
	SupplementalGroups SupplementalGroupsStrategyOptions
	// FSGroup constrains and defaults the pod's fsGroup.
	FSGroup FSGroupStrategyOptions
	// ReadOnlyRootFilesystem requires every container to run with a read-only root
	// filesystem; a container asking for a writable one is rejected.
	// +optional
	ReadOnlyRootFilesystem bool
	// DefaultAllowPrivilegeEscalation is the allowPrivilegeEscalation given to containers
	// that do not set it.
	// +optional
	DefaultAllowPrivilegeEscalation *bool
	// AllowPrivilegeEscalation allows containers to ask for privilege escalation. The
	// versioned API defaults it to true.
	// +optional
	AllowPrivilegeEscalation bool
	// AllowedHostPaths lists the host path prefixes hostPath volumes may use; empty allows
	// any path.
	// +optional
	AllowedHostPaths []AllowedHostPath
	// AllowedFlexVolumes lists the Flexvolume drivers pods may use when flexVolume is an
	// allowed volume; empty allows any driver.
	// +optional
	AllowedFlexVolumes []AllowedFlexVolume
	// AllowedCSIDrivers lists the CSI drivers inline CSI volumes may use; empty allows any.
	// +optional
	AllowedCSIDrivers []AllowedCSIDriver
	// AllowedUnsafeSysctls lists unsafe sysctls pods may set: exact names, or prefixes
	// ending in "*"; "*" alone allows all.
	// +optional
	AllowedUnsafeSysctls []string
	// ForbiddenSysctls lists sysctls pods may not set: exact names, or prefixes ending in
	// "*"; "*" alone forbids all.
	// +optional
	ForbiddenSysctls []string
	// AllowedProcMountTypes lists the procMount types containers may ask for; empty allows
	// only the default.
	// +optional
	AllowedProcMountTypes []api.ProcMountType
	// RuntimeClass constrains and defaults the pod's runtimeClassName; nil leaves it
	// unrestricted.
	// +optional
	RuntimeClass *RuntimeClassStrategyOptions
}

// AllowedHostPath is a host path prefix hostPath volumes may use.
type AllowedHostPath struct {
	// PathPrefix is matched path-component-wise, trailing slashes ignored: "/foo" allows
	// "/foo" and "/foo/bar" but not "/food". It takes no wildcards.
	PathPrefix string

	// ReadOnly allows the prefix only to volumes that every container mounts read-only.
	ReadOnly bool
}

// HostPortRange is an inclusive range of host ports.
type HostPortRange struct {
	// Min is the first port of the range.
	Min int32
	// Max is the last port of the range.
	Max int32
}

// AllowAllCapabilities in AllowedCapabilities allows any capability.
var AllowAllCapabilities api.Capability = "*"

// FSType names a kind of volume, as the volume source's field is named in a pod spec.
type FSType string

// The volume kinds a policy may name. Kinds whose plugins Kubernetes has since removed stay
// valid so that existing policies keep validating.
const (
	AzureFile             FSType = "azureFile"
	Flocker               FSType = "flocker"
	FlexVolume            FSType = "flexVolume"
	HostPath              FSType = "hostPath"
	EmptyDir              FSType = "emptyDir"
	GCEPersistentDisk     FSType = "gcePersistentDisk"
	AWSElasticBlockStore  FSType = "awsElasticBlockStore"
	GitRepo               FSType = "gitRepo"
	Secret                FSType = "secret"
	NFS                   FSType = "nfs"
	ISCSI                 FSType = "iscsi"
	Glusterfs             FSType = "glusterfs"
	PersistentVolumeClaim FSType = "persistentVolumeClaim"
	RBD                   FSType = "rbd"
	Cinder                FSType = "cinder"
	CephFS                FSType = "cephFS"
	DownwardAPI           FSType = "downwardAPI"
	FC                    FSType = "fc"
	ConfigMap             FSType = "configMap"
	VsphereVolume         FSType = "vsphereVolume"
	Quobyte               FSType = "quobyte"
	AzureDisk             FSType = "azureDisk"
	PhotonPersistentDisk  FSType = "photonPersistentDisk"
	StorageOS             FSType = "storageos"
	Projected             FSType = "projected"
	PortworxVolume        FSType = "portworxVolume"
	ScaleIO               FSType = "scaleIO"
	CSI                   FSType = "csi"
	Ephemeral             FSType = "ephemeral"
	// Image is the OCI image volume source, added to pods after PodSecurityPolicy was
	// removed upstream.
	Image FSType = "image"
	// All allows every kind of volume.
	All FSType = "*"
)

// AllowedFlexVolume is a Flexvolume driver pods may use.
type AllowedFlexVolume struct {
	// Driver is the driver's name.
	Driver string
}

// AllowedCSIDriver is a CSI driver inline CSI volumes may use.
type AllowedCSIDriver struct {
	// Name is the driver's registered name.
	Name string
}

// SELinuxStrategyOptions chooses the SELinux strategy and its options.
type SELinuxStrategyOptions struct {
	// Rule is the strategy.
	Rule SELinuxStrategy
	// SELinuxOptions are the labels pods must run with; required for MustRunAs.
	// +optional
	SELinuxOptions *api.SELinuxOptions
}

// SELinuxStrategy is a strategy for SELinux labels.
type SELinuxStrategy string

const (
	// SELinuxStrategyMustRunAs requires the labels of SELinuxOptions.
	SELinuxStrategyMustRunAs SELinuxStrategy = "MustRunAs"
	// SELinuxStrategyRunAsAny allows any labels.
	SELinuxStrategyRunAsAny SELinuxStrategy = "RunAsAny"
)

// RunAsUserStrategyOptions chooses the RunAsUser strategy and its ranges.
type RunAsUserStrategyOptions struct {
	// Rule is the strategy.
	Rule RunAsUserStrategy
	// Ranges are the UIDs allowed; required for MustRunAs. A single-UID range forces that UID.
	// +optional
	Ranges []IDRange
}

// RunAsGroupStrategyOptions chooses the RunAsGroup strategy and its ranges.
type RunAsGroupStrategyOptions struct {
	// Rule is the strategy.
	Rule RunAsGroupStrategy
	// Ranges are the GIDs allowed; required for MustRunAs and MayRunAs.
	// +optional
	Ranges []IDRange
}

// IDRange is an inclusive range of user or group IDs.
type IDRange struct {
	// Min is the first ID of the range.
	Min int64
	// Max is the last ID of the range.
	Max int64
}

// RunAsUserStrategy is a strategy for the UID a container runs as.
type RunAsUserStrategy string

const (
	// RunAsUserStrategyMustRunAs requires a UID within the ranges (defaulting the first).
	RunAsUserStrategyMustRunAs RunAsUserStrategy = "MustRunAs"
	// RunAsUserStrategyMustRunAsNonRoot requires a non-zero UID.
	RunAsUserStrategyMustRunAsNonRoot RunAsUserStrategy = "MustRunAsNonRoot"
	// RunAsUserStrategyRunAsAny allows any UID.
	RunAsUserStrategyRunAsAny RunAsUserStrategy = "RunAsAny"
)

// RunAsGroupStrategy is a strategy for the primary GID a container runs as.
type RunAsGroupStrategy string

const (
	// RunAsGroupStrategyMayRunAs checks a GID that is set against the ranges, without
	// requiring or defaulting one.
	RunAsGroupStrategyMayRunAs RunAsGroupStrategy = "MayRunAs"
	// RunAsGroupStrategyMustRunAs requires a GID within the ranges (defaulting the first).
	RunAsGroupStrategyMustRunAs RunAsGroupStrategy = "MustRunAs"
	// RunAsGroupStrategyRunAsAny allows any GID.
	RunAsGroupStrategyRunAsAny RunAsGroupStrategy = "RunAsAny"
)

// FSGroupStrategyOptions chooses the FSGroup strategy and its ranges.
type FSGroupStrategyOptions struct {
	// Rule is the strategy.
	// +optional
	Rule FSGroupStrategyType
	// Ranges are the fsGroups allowed; required for MustRunAs and MayRunAs.
	// +optional
	Ranges []IDRange
}

// FSGroupStrategyType is a strategy for the pod's fsGroup.
type FSGroupStrategyType string

const (
	// FSGroupStrategyMayRunAs checks an fsGroup that is set against the ranges, without
	// requiring or defaulting one.
	FSGroupStrategyMayRunAs FSGroupStrategyType = "MayRunAs"
	// FSGroupStrategyMustRunAs requires an fsGroup within the ranges (defaulting the first).
	FSGroupStrategyMustRunAs FSGroupStrategyType = "MustRunAs"
	// FSGroupStrategyRunAsAny allows any fsGroup.
	FSGroupStrategyRunAsAny FSGroupStrategyType = "RunAsAny"
)

// SupplementalGroupsStrategyOptions chooses the SupplementalGroups strategy and its ranges.
type SupplementalGroupsStrategyOptions struct {
	// Rule is the strategy.
	// +optional
	Rule SupplementalGroupsStrategyType
	// Ranges are the supplemental groups allowed; required for MustRunAs and MayRunAs.
	// +optional
	Ranges []IDRange
}

// SupplementalGroupsStrategyType is a strategy for the pod's supplemental groups.
type SupplementalGroupsStrategyType string

const (
	// SupplementalGroupsStrategyMayRunAs checks groups that are set against the ranges,
	// without requiring or defaulting any.
	SupplementalGroupsStrategyMayRunAs SupplementalGroupsStrategyType = "MayRunAs"
	// SupplementalGroupsStrategyMustRunAs requires groups within the ranges (defaulting the
	// first range's minimum).
	SupplementalGroupsStrategyMustRunAs SupplementalGroupsStrategyType = "MustRunAs"
	// SupplementalGroupsStrategyRunAsAny allows any groups.
	SupplementalGroupsStrategyRunAsAny SupplementalGroupsStrategyType = "RunAsAny"
)

// RuntimeClassStrategyOptions constrains and defaults the pod's runtimeClassName.
type RuntimeClassStrategyOptions struct {
	// AllowedRuntimeClassNames are the names pods may use. "*" allows any and must then be
	// the only entry; an empty list requires runtimeClassName to be unset.
	AllowedRuntimeClassNames []string
	// DefaultRuntimeClassName is set on pods that set none; it must be allowed. Nil leaves
	// the pod unchanged.
	// +optional
	DefaultRuntimeClassName *string
}

// AllowAllRuntimeClassNames in AllowedRuntimeClassNames allows any RuntimeClass name.
const AllowAllRuntimeClassNames = "*"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodSecurityPolicyList is a list of PodSecurityPolicy objects.
type PodSecurityPolicyList struct {
	metav1.TypeMeta
	// +optional
	metav1.ListMeta

	// Items are the policies.
	Items []PodSecurityPolicy
}
