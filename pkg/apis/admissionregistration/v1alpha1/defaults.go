package v1alpha1

import (
	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
)

// SetDefaults_Initializer defaults an initializer's matchPolicy to Equivalent, as webhooks'
// is: a rule for a resource holds whichever served version a creator uses.
func SetDefaults_Initializer(obj *admissionregistrationv1alpha1.Initializer) {
	if obj.MatchPolicy == nil {
		policy := admissionregistrationv1alpha1.Equivalent
		obj.MatchPolicy = &policy
	}
}
