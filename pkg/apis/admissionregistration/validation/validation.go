// Package validation validates InitializerConfigurations by Kubernetes 1.13's rules.
package validation

import (
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration"
)

// ValidateInitializerConfiguration checks a configuration: a DNS subdomain as its name,
// fully qualified initializer names, and rules that name at least one group, version and
// resource each, "*" alone where it appears, and no subresource.
func ValidateInitializerConfiguration(ic *admissionregistration.InitializerConfiguration) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&ic.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	for i := range ic.Initializers {
		errs = append(errs, validateInitializer(&ic.Initializers[i], field.NewPath("initializers").Index(i))...)
	}
	return errs
}

// ValidateInitializerConfigurationUpdate checks an update as a new configuration: 1.13 had
// no immutable field (the generic registry checks the metadata's update rules).
func ValidateInitializerConfigurationUpdate(newIC, _ *admissionregistration.InitializerConfiguration) field.ErrorList {
	return ValidateInitializerConfiguration(newIC)
}

func validateInitializer(initializer *admissionregistration.Initializer, path *field.Path) field.ErrorList {
	errs := ValidateInitializerName(path.Child("name"), initializer.Name)
	for i := range initializer.Rules {
		errs = append(errs, validateRule(&initializer.Rules[i], path.Child("rules").Index(i))...)
	}
	if policy := initializer.MatchPolicy; policy != nil && !supportedMatchPolicies.Has(string(*policy)) {
		errs = append(errs, field.NotSupported(path.Child("matchPolicy"), *policy, sets.List(supportedMatchPolicies)))
	}
	return errs
}

var supportedMatchPolicies = sets.New(string(admissionregistration.Exact), string(admissionregistration.Equivalent))

// ValidateInitializerName checks an initializer's name: fully qualified (1.13's rule), and
// a valid scheduling-gate name, which the Initializers plugin makes of a pod's initializers:
// at most 63 characters.
func ValidateInitializerName(path *field.Path, name string) field.ErrorList {
	if errs := utilvalidation.IsFullyQualifiedName(path, name); len(errs) > 0 {
		return errs
	}
	if problems := utilvalidation.IsQualifiedName(name); len(problems) > 0 {
		return field.ErrorList{field.Invalid(path, name, strings.Join(problems, "; ")+
			" (an initializer's name is also the name of the scheduling gate that holds a pod until the initializer is done)")}
	}
	return nil
}

func validateRule(rule *admissionregistration.Rule, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	// An empty group is the core group: "" is a value, not a missing one.
	errs = append(errs, validateList(rule.APIGroups, path.Child("apiGroups"), "API groups", false)...)
	errs = append(errs, validateList(rule.APIVersions, path.Child("apiVersions"), "API versions", true)...)
	errs = append(errs, validateList(rule.Resources, path.Child("resources"), "resources", true)...)
	for i, resource := range rule.Resources {
		if strings.Contains(resource, "/") {
			errs = append(errs, field.Invalid(path.Child("resources").Index(i), resource, "must not specify subresources"))
		}
	}
	return errs
}

// validateList requires at least one value, "*" only alone and, when emptyInvalid, no empty
// value.
func validateList(values []string, path *field.Path, what string, emptyInvalid bool) field.ErrorList {
	var errs field.ErrorList
	if len(values) == 0 {
		errs = append(errs, field.Required(path, ""))
	}
	if len(values) > 1 && sets.New(values...).Has("*") {
		errs = append(errs, field.Invalid(path, values, "if '*' is present, must not specify other "+what))
	}
	if emptyInvalid {
		for i, v := range values {
			if v == "" {
				errs = append(errs, field.Required(path.Index(i), ""))
			}
		}
	}
	return errs
}
