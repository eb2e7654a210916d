// Package policy holds the internal (hub) form of the PodSecurityPolicy API that Portcullis
// serves as policy/v1beta1. The types match Kubernetes 1.24's internal policy types, so the
// policy engine (pkg/security/podsecuritypolicy) reads them as upstream's engine did.
//
// +k8s:deepcopy-gen=package
// +groupName=policy
package policy
