package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InitializerConfiguration describes the configuration of initializers: which new objects
// are held until named controllers have initialized them.
type InitializerConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Initializers is a list of resources and their default initializers.
	// Order-sensitive. When merging multiple InitializerConfigurations, the initializers of
	// different configurations are sorted by the name of their configuration; the order of
	// the initializers of one configuration is preserved.
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +optional
	Initializers []Initializer `json:"initializers,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InitializerConfigurationList is a list of InitializerConfiguration.
type InitializerConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// List of InitializerConfiguration.
	Items []InitializerConfiguration `json:"items"`
}

// Initializer describes the name of an initializer and what resources it applies to.
type Initializer struct {
	// Name is the identifier of the initializer. It is added to the objects that need to be
	// initialized. Name should be fully qualified, e.g. alwayspullimages.kubernetes.io,
	// where "alwayspullimages" is the name of the initializer and kubernetes.io the name of
	// the organization.
	Name string `json:"name"`

	// Rules describes what resources the initializer cares about. The initializer cares
	// about an object if it matches any Rule. Rule.Resources must not include subresources.
	// +optional
	Rules []Rule `json:"rules,omitempty"`

	// MatchPolicy says how Rules match a request made through another version of a
	// resource than the rules name, as a webhook's matchPolicy does:
	//
	// - Exact: only the group, version and resource the rules name. A creator who creates
	//   through another served version (autoscaling/v1 for a rule naming autoscaling/v2
	//   horizontalpodautoscalers) makes an object without this initializer.
	// - Equivalent: also the same objects created through any other group or version that
	//   serves them.
	//
	// Defaults to "Equivalent" (1.13 matched exactly; it had no such field).
	// +optional
	MatchPolicy *MatchPolicyType `json:"matchPolicy,omitempty"`
}

// MatchPolicyType is how rules match a request made through another version of a resource.
// +enum
type MatchPolicyType string

const (
	// Exact matches only the group, version and resource the rules name.
	Exact MatchPolicyType = "Exact"
	// Equivalent also matches the same objects through every group and version that serves
	// them.
	Equivalent MatchPolicyType = "Equivalent"
)

// Rule is a tuple of APIGroups, APIVersions and Resources.
type Rule struct {
	// APIGroups is the API groups the resources belong to. '*' is all groups; if '*' is
	// present, the length of the slice must be one.
	APIGroups []string `json:"apiGroups,omitempty"`

	// APIVersions is the API versions the resources belong to. '*' is all versions; if
	// '*' is present, the length of the slice must be one.
	APIVersions []string `json:"apiVersions,omitempty"`

	// Resources is a list of resources this rule applies to: 'pods' means pods, '*' all
	// resources. Subresources are not allowed; if '*' is present, the length of the slice
	// must be one.
	Resources []string `json:"resources,omitempty"`
}
