// Package v1beta1 converts and defaults policy/v1beta1 PodSecurityPolicy
// (github.com/portcullis-k8s/api/policy/v1beta1) to and from the internal types of
// github.com/portcullis-k8s/portcullis/pkg/apis/policy.
//
// +k8s:conversion-gen=github.com/portcullis-k8s/portcullis/pkg/apis/policy
// +k8s:conversion-gen-external-types=github.com/portcullis-k8s/api/policy/v1beta1
// +k8s:defaulter-gen=TypeMeta
// +k8s:defaulter-gen-input=github.com/portcullis-k8s/api/policy/v1beta1
package v1beta1
