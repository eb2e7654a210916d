// Package admissionregistration holds the internal (hub) form of the InitializerConfiguration
// API that Portcullis serves as admissionregistration.k8s.io/v1alpha1, beside upstream's
// internal admissionregistration types (k8s.io/kubernetes/pkg/apis/admissionregistration),
// which own the rest of the group.
//
// +k8s:deepcopy-gen=package
// +groupName=admissionregistration.k8s.io
package admissionregistration
