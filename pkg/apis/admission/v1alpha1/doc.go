// Package v1alpha1 converts admission.portcullis.io/v1alpha1
// (github.com/portcullis-k8s/api/admission/v1alpha1) to and from the internal types of
// github.com/portcullis-k8s/portcullis/pkg/apis/admission, and defaults it.
//
// +k8s:conversion-gen=github.com/portcullis-k8s/portcullis/pkg/apis/admission
// +k8s:conversion-gen-external-types=github.com/portcullis-k8s/api/admission/v1alpha1
// +k8s:defaulter-gen=TypeMeta
// +k8s:defaulter-gen-input=github.com/portcullis-k8s/api/admission/v1alpha1
package v1alpha1
