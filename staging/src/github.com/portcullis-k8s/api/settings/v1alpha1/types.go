package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodPreset injects environment variables, volumes and volume mounts into the pods of its
// namespace that its selector matches, when they are created.
type PodPreset struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PodPresetSpec `json:"spec,omitempty"`
}

// PodPresetSpec is what a PodPreset injects, and into which pods.
type PodPresetSpec struct {
	// Selector chooses the pods of the namespace the preset applies to. An empty or absent
	// selector matches every pod.
	// +optional
	Selector metav1.LabelSelector `json:"selector,omitempty"`
	// Env is appended to every init and regular container's environment.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// EnvFrom is appended to every init and regular container's envFrom.
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
	// Volumes are added to the pod.
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// VolumeMounts are appended to every init and regular container; each names one of
	// Volumes.
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodPresetList is a list of PodPresets.
type PodPresetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PodPreset `json:"items"`
}
