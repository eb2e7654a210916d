package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodSecurityPolicy is a cluster-scoped set of conditions a pod's security-relevant
// settings must meet to be admitted, and defaults applied to the pods it admits.
type PodSecurityPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the policy itself.
	// +optional
	Spec PodSecurityPolicySpec `json:"spec,omitempty"`
}

// PodSecurityPolicySpec is what a PodSecurityPolicy allows, requires and defaults.
type PodSecurityPolicySpec struct {
	// privileged allows containers to run privileged.
	// +optional
	Privileged bool `json:"privileged,omitempty"`
	// defaultAddCapabilities are added to every container unless the container drops them
	// explicitly. They are implicitly allowed; none may also be in requiredDropCapabilities.
	// +optional
	DefaultAddCapabilities []corev1.Capability `json:"defaultAddCapabilities,omitempty"`
	// requiredDropCapabilities are dropped from every container and may not be added.
	// +optional
	RequiredDropCapabilities []corev1.Capability `json:"requiredDropCapabilities,omitempty"`
	// allowedCapabilities may be added by a container; "*" allows any. None may also be in
	// requiredDropCapabilities.
	// +optional
	AllowedCapabilities []corev1.Capability `json:"allowedCapabilities,omitempty"`
	// volumes lists the volume kinds pods may use; empty allows none, "*" allows all.
	// +optional
	Volumes []FSType `json:"volumes,omitempty"`
	// hostNetwork allows pods to use the host's network namespace.
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// hostPorts lists the host port ranges containers may expose.
	// +optional
	HostPorts []HostPortRange `json:"hostPorts,omitempty"`
	// hostPID allows pods to use the host's PID namespace.
	// +optional
	HostPID bool `json:"hostPID,omitempty"`
	// hostIPC allows pods to use the host's IPC namespace.
	// +optional
	HostIPC bool `json:"hostIPC,omitempty"`
	// seLinux constrains and defaults the SELinux labels of pods and containers.
	SELinux SELinuxStrategyOptions `json:"seLinux"`
	// runAsUser constrains and defaults the UIDs pods and containers run as.
	RunAsUser RunAsUserStrategyOptions `json:"runAsUser"`
	// runAsGroup constrains and defaults the primary GIDs; when omitted they are
	// unrestricted.
	// +optional
	RunAsGroup *RunAsGroupStrategyOptions `json:"runAsGroup,omitempty"`
	// supplementalGroups constrains and defaults the pod's supplemental groups.
	SupplementalGroups SupplementalGroupsStrategyOptions `json:"supplementalGroups"`
	// fsGroup constrains and defaults the pod's fsGroup.
	FSGroup FSGroupStrategyOptions `json:"fsGroup"`
	// readOnlyRootFilesystem requires every container to run with a read-only root
	// filesystem; a container asking for a writable one is rejected.
	// +optional
	ReadOnlyRootFilesystem bool `json:"readOnlyRootFilesystem,omitempty"`
	// defaultAllowPrivilegeEscalation is the allowPrivilegeEscalation given to containers
	// that do not set it.
	// +optional
	DefaultAllowPrivilegeEscalation *bool `json:"defaultAllowPrivilegeEscalation,omitempty"`
	// allowPrivilegeEscalation allows containers to ask for privilege escalation. Defaults
	// to true.
	// +optional
	AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation,omitempty"`
	// allowedHostPaths lists the host path prefixes hostPath volumes may use; empty allows
	// any path.
	// +optional
	AllowedHostPaths []AllowedHostPath `json:"allowedHostPaths,omitempty"`
	// allowedFlexVolumes lists the Flexvolume drivers pods may use when flexVolume is an
	// allowed volume; empty allows any driver.
	// +optional
	AllowedFlexVolumes []AllowedFlexVolume `json:"allowedFlexVolumes,omitempty"`
	// allowedCSIDrivers lists the CSI drivers inline CSI volumes may use; empty allows any.
	// +optional
	AllowedCSIDrivers []AllowedCSIDriver `json:"allowedCSIDrivers,omitempty"`
	// allowedUnsafeSysctls lists unsafe sysctls pods may set: exact names, or prefixes
	// ending in "*" ("foo.*" allows "foo.bar"); "*" alone allows all. The kubelet must
	// allow them too.
	// +optional
	AllowedUnsafeSysctls []string `json:"allowedUnsafeSysctls,omitempty"`
	// forbiddenSysctls lists sysctls pods may not set: exact names, or prefixes ending in
	// "*"; "*" alone forbids all.
	// +optional
	ForbiddenSysctls []string `json:"forbiddenSysctls,omitempty"`
	// allowedProcMountTypes lists the procMount types containers may ask for; empty allows
	// only the default.
	// +optional
	AllowedProcMountTypes []corev1.ProcMountType `json:"allowedProcMountTypes,omitempty"`
	// runtimeClass constrains and defaults the pod's runtimeClassName; when omitted it is
	// unrestricted.
	// +optional
	RuntimeClass *RuntimeClassStrategyOptions `json:"runtimeClass,omitempty"`
}

// AllowedHostPath is a host path prefix hostPath volumes may use.
type AllowedHostPath struct {
	// pathPrefix is matched path-component-wise, trailing slashes ignored: "/foo" allows
	// "/foo" and "/foo/bar" but not "/food". It takes no wildcards.
	PathPrefix string `json:"pathPrefix,omitempty"`

	// readOnly allows the prefix only to volumes that every container mounts read-only.
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`
}

// AllowAllCapabilities in allowedCapabilities allows any capability.
var AllowAllCapabilities corev1.Capability = "*"

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
	// driver is the driver's name.
	Driver string `json:"driver"`
}

// AllowedCSIDriver is a CSI driver inline CSI volumes may use.
type AllowedCSIDriver struct {
	// name is the driver's registered name.
	Name string `json:"name"`
}

// HostPortRange is an inclusive range of host ports.
type HostPortRange struct {
	// min is the first port of the range.
	Min int32 `json:"min"`
	// max is the last port of the range.
	Max int32 `json:"max"`
}

// SELinuxStrategyOptions chooses the SELinux strategy and its options.
type SELinuxStrategyOptions struct {
	// rule is the strategy.
	Rule SELinuxStrategy `json:"rule"`
	// seLinuxOptions are the labels pods must run with; required for MustRunAs.
	// +optional
	SELinuxOptions *corev1.SELinuxOptions `json:"seLinuxOptions,omitempty"`
}

// SELinuxStrategy is a strategy for SELinux labels.
type SELinuxStrategy string

const (
	// SELinuxStrategyMustRunAs requires the labels of seLinuxOptions.
	SELinuxStrategyMustRunAs SELinuxStrategy = "MustRunAs"
	// SELinuxStrategyRunAsAny allows any labels.
	SELinuxStrategyRunAsAny SELinuxStrategy = "RunAsAny"
)

// RunAsUserStrategyOptions chooses the RunAsUser strategy and its ranges.
type RunAsUserStrategyOptions struct {
	// rule is the strategy.
	Rule RunAsUserStrategy `json:"rule"`
	// ranges are the UIDs allowed; required for MustRunAs. A single-UID range forces that UID.
	// +optional
	Ranges []IDRange `json:"ranges,omitempty"`
}

// RunAsGroupStrategyOptions chooses the RunAsGroup strategy and its ranges.
type RunAsGroupStrategyOptions struct {
	// rule is the strategy.
	Rule RunAsGroupStrategy `json:"rule"`
	// ranges are the GIDs allowed; required for MustRunAs and MayRunAs.
	// +optional
	Ranges []IDRange `json:"ranges,omitempty"`
}

// IDRange is an inclusive range of user or group IDs.
type IDRange struct {
	// min is the first ID of the range.
	Min int64 `json:"min"`
	// max is the last ID of the range.
	Max int64 `json:"max"`
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
	// rule is the strategy.
	// +optional
	Rule FSGroupStrategyType `json:"rule,omitempty"`
	// ranges are the fsGroups allowed; required for MustRunAs and MayRunAs.
	// +optional
	Ranges []IDRange `json:"ranges,omitempty"`
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
	// rule is the strategy.
	// +optional
	Rule SupplementalGroupsStrategyType `json:"rule,omitempty"`
	// ranges are the supplemental groups allowed; required for MustRunAs and MayRunAs.
	// +optional
	Ranges []IDRange `json:"ranges,omitempty"`
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
	// allowedRuntimeClassNames are the names pods may use. "*" allows any and must then be
	// the only entry; an empty list requires runtimeClassName to be unset.
	AllowedRuntimeClassNames []string `json:"allowedRuntimeClassNames"`
	// defaultRuntimeClassName is set on pods that set none; it must be allowed. When
	// omitted the pod is left unchanged.
	// +optional
	DefaultRuntimeClassName *string `json:"defaultRuntimeClassName,omitempty"`
}

// AllowAllRuntimeClassNames in allowedRuntimeClassNames allows any RuntimeClass name.
const AllowAllRuntimeClassNames = "*"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodSecurityPolicyList is a list of PodSecurityPolicy objects.
type PodSecurityPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the policies.
	Items []PodSecurityPolicy `json:"items"`
}
