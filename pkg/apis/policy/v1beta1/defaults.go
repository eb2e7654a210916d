package v1beta1

import (
	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_PodSecurityPolicySpec defaults allowPrivilegeEscalation to true. The field came
// after PodSecurityPolicy itself, and a policy that does not set it must stay as permissive
// as it was before the field existed.
func SetDefaults_PodSecurityPolicySpec(obj *policyv1beta1.PodSecurityPolicySpec) {
	if obj.AllowPrivilegeEscalation == nil {
		t := true
		obj.AllowPrivilegeEscalation = &t
	}
}
