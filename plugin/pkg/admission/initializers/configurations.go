package initializers

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration/validation"
)

// toTyped converts a listed configuration to its type once, when it enters the informer's
// cache.
func toTyped(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		// Deletion tombstones and typed objects pass as they are.
		return obj, nil
	}
	config := &admissionregistrationv1alpha1.InitializerConfiguration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, config); err != nil {
		return nil, fmt.Errorf("InitializerConfiguration %s: %w", u.GetName(), err)
	}
	// A configuration stored before names were limited to what a scheduling gate takes
	// would make every matched pod create fail: its invalid initializers are left out.
	config.Initializers = slices.DeleteFunc(config.Initializers, func(i admissionregistrationv1alpha1.Initializer) bool {
		errs := validation.ValidateInitializerName(field.NewPath("initializers").Key(i.Name), i.Name)
		if len(errs) > 0 {
			klog.ErrorS(errs.ToAggregate(), "Initializers: an initializer of a stored InitializerConfiguration is not applied; shorten its name", "configuration", config.Name, "initializer", i.Name)
		}
		return len(errs) > 0
	})
	return config, nil
}

// sortedByName sorts configs, a slice of the caller's own, in the order their initializers
// are pending (by name), and returns it.
func sortedByName(configs []*admissionregistrationv1alpha1.InitializerConfiguration) []*admissionregistrationv1alpha1.InitializerConfiguration {
	slices.SortFunc(configs, func(a, b *admissionregistrationv1alpha1.InitializerConfiguration) int {
		return strings.Compare(a.Name, b.Name)
	})
	return configs
}

// initializersFor returns the initializers whose rules match resource: configurations in
// the order given (sortedByName), each configuration's initializers in order, each name once
// (its first place). equivalents, called at most once and only for an initializer whose
// match policy is Equivalent that the rules do not match exactly, returns the resources that
// serve the same objects (resource among them, or not). Nothing is allocated when none
// matches.
func initializersFor(configs []*admissionregistrationv1alpha1.InitializerConfiguration, resource schema.GroupVersionResource, equivalents func() []schema.GroupVersionResource) []string {
	var names []string
	var others []schema.GroupVersionResource
	othersRead := false
	for _, config := range configs {
		for _, initializer := range config.Initializers {
			if slices.Contains(names, initializer.Name) {
				continue
			}
			matched := matchesAny(initializer.Rules, resource)
			if !matched && equivalentPolicy(initializer.MatchPolicy) {
				if !othersRead {
					others, othersRead = equivalents(), true
				}
				matched = slices.ContainsFunc(others, func(other schema.GroupVersionResource) bool {
					return other != resource && matchesAny(initializer.Rules, other)
				})
			}
			if matched {
				names = append(names, initializer.Name)
			}
		}
	}
	return names
}

// equivalentPolicy reports whether a match policy is Equivalent, its default: a
// configuration read from another source than the API (which defaults it) may lack it.
func equivalentPolicy(policy *admissionregistrationv1alpha1.MatchPolicyType) bool {
	return policy == nil || *policy == admissionregistrationv1alpha1.Equivalent
}

// matchesAny reports whether any rule matches resource, as the API documents ("The
// initializer cares about an operation if it matches _any_ Rule"). 1.13's code required
// every rule to match; the documented behaviour is the one kept.
func matchesAny(rules []admissionregistrationv1alpha1.Rule, resource schema.GroupVersionResource) bool {
	return slices.ContainsFunc(rules, func(rule admissionregistrationv1alpha1.Rule) bool {
		return matches(rule.APIGroups, resource.Group) && matches(rule.APIVersions, resource.Version) && matches(rule.Resources, resource.Resource)
	})
}

func matches(values []string, value string) bool {
	return slices.Contains(values, "*") || slices.Contains(values, value)
}
