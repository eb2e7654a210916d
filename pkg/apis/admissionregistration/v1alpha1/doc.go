// Package v1alpha1 converts admissionregistration.k8s.io/v1alpha1 InitializerConfiguration
// (github.com/portcullis-k8s/api/admissionregistration/v1alpha1) to and from the internal
// types of github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration.
//
// +k8s:conversion-gen=github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration
// +k8s:conversion-gen-external-types=github.com/portcullis-k8s/api/admissionregistration/v1alpha1
// +k8s:defaulter-gen=TypeMeta
// +k8s:defaulter-gen-input=github.com/portcullis-k8s/api/admissionregistration/v1alpha1
package v1alpha1
