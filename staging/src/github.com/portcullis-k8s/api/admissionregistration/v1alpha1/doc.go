// Package v1alpha1 is admissionregistration.k8s.io/v1alpha1 InitializerConfiguration, the
// API upstream Kubernetes served from 1.7 to 1.13 for the Initializers admission plugin, and
// Portcullis serves again beside upstream's own resources of that group version. Only the
// InitializerConfiguration kinds live here: upstream's v1alpha1 kinds stay in
// k8s.io/api/admissionregistration/v1alpha1. Existing manifests apply unchanged.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.k8s.api.admissionregistration.v1alpha1
// +groupName=admissionregistration.k8s.io
package v1alpha1
