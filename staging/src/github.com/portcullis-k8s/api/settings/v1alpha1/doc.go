// Package v1alpha1 is settings.k8s.io/v1alpha1, the PodPreset API that upstream Kubernetes
// served from 1.6 to 1.19 and Portcullis serves again. Existing PodPreset manifests apply
// unchanged.
//
// +k8s:deepcopy-gen=package
// +groupName=settings.k8s.io
package v1alpha1
