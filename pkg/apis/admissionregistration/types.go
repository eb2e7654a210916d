package admissionregistration

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InitializerConfiguration describes the configuration of initializers.
type InitializerConfiguration struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// Initializers is a list of resources and their default initializers, in order.
	Initializers []Initializer
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InitializerConfigurationList is a list of InitializerConfiguration.
type InitializerConfigurationList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []InitializerConfiguration
}

// Initializer is the name of an initializer and the resources it applies to.
type Initializer struct {
	// Name is the fully qualified name of the initializer, recorded on the objects it is to
	// initialize.
	Name string
	// Rules are the resources the initializer cares about: any of them.
	Rules []Rule
	// MatchPolicy says whether the rules match the same objects requested through another
	// group or version (Equivalent) or only those they name (Exact).
	MatchPolicy *MatchPolicyType
}

// MatchPolicyType is how rules match a request made through another version of a resource.
type MatchPolicyType string

const (
	// Exact matches only the group, version and resource the rules name.
	Exact MatchPolicyType = "Exact"
	// Equivalent also matches the same objects through every group and version that serves
	// them.
	Equivalent MatchPolicyType = "Equivalent"
)

// Rule is a tuple of API groups, API versions and resources; "*" is every one.
type Rule struct {
	APIGroups   []string
	APIVersions []string
	Resources   []string
}
