// Package install adds policy/v1beta1 PodSecurityPolicy and its internal version to a scheme
// that already serves upstream's policy group.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy/v1beta1"
)

// Install registers the internal PodSecurityPolicy types and policy/v1beta1 (types,
// conversions, defaults) in scheme. It leaves the group's version priority alone: policy/v1
// stays the preferred and storage version of the policy group, as upstream's install sets it.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(policy.AddToScheme(scheme))
	utilruntime.Must(v1beta1.AddToScheme(scheme))
}
