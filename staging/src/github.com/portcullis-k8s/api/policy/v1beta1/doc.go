// Package v1beta1 is policy/v1beta1 PodSecurityPolicy, the API that upstream Kubernetes
// served from 1.10 to 1.24 and Portcullis serves again beside policy/v1. Only the
// PodSecurityPolicy kinds live here: PodDisruptionBudget and Eviction are served by
// upstream at policy/v1. Existing PodSecurityPolicy manifests apply unchanged.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.k8s.api.policy.v1beta1
// +groupName=policy
package v1beta1
