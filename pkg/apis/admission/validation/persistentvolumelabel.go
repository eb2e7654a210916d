package validation

import (
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	volumehelpers "k8s.io/cloud-provider/volume/helpers"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// The values each PersistentVolumeLabel setting takes, the first of each its default.
var (
	persistentVolumeLabelResolvers = []admission.PersistentVolumeLabelResolverName{
		admission.PersistentVolumeLabelResolverCSITopology,
		admission.PersistentVolumeLabelResolverNodes,
		admission.PersistentVolumeLabelResolverVolumeID,
		admission.PersistentVolumeLabelResolverRules,
	}
	persistentVolumeLabelKeys = []admission.PersistentVolumeLabelKeys{
		admission.PersistentVolumeLabelKeysGA,
		admission.PersistentVolumeLabelKeysBeta,
		admission.PersistentVolumeLabelKeysBoth,
	}
	persistentVolumeLabelNodeAffinities = []admission.PersistentVolumeLabelNodeAffinity{
		admission.PersistentVolumeLabelNodeAffinityAdd,
		admission.PersistentVolumeLabelNodeAffinityNone,
	}
	persistentVolumeLabelUnresolved = []admission.PersistentVolumeLabelUnresolved{
		admission.PersistentVolumeLabelUnresolvedAdmit,
		admission.PersistentVolumeLabelUnresolvedRefuse,
	}
)

// ValidatePersistentVolumeLabelConfiguration checks the PersistentVolumeLabel plugin's
// defaulted configuration; fldPath is where it sits (nil: the entry's root).
func ValidatePersistentVolumeLabelConfiguration(cfg *admission.PersistentVolumeLabelConfiguration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	resolversPath := fldPath.Child("resolvers")
	if len(cfg.Resolvers) == 0 {
		errs = append(errs, field.Required(resolversPath, "at least one resolver, or leave it out for the default"))
	}
	seen := sets.New[admission.PersistentVolumeLabelResolverName]()
	for i, r := range cfg.Resolvers {
		switch {
		case !slices.Contains(persistentVolumeLabelResolvers, r):
			errs = append(errs, field.NotSupported(resolversPath.Index(i), r, persistentVolumeLabelResolvers))
		case seen.Has(r):
			errs = append(errs, field.Duplicate(resolversPath.Index(i), r))
		case r == admission.PersistentVolumeLabelResolverRules && len(cfg.Rules) == 0:
			errs = append(errs, field.Required(fldPath.Child("rules"), "the Rules resolver needs at least one rule"))
		}
		seen.Insert(r)
	}
	if len(cfg.Rules) > 0 && !seen.Has(admission.PersistentVolumeLabelResolverRules) {
		errs = append(errs, field.Invalid(resolversPath, cfg.Resolvers, "rules are given but the Rules resolver is not listed: they would never be used"))
	}
	if !slices.Contains(persistentVolumeLabelKeys, cfg.LabelKeys) {
		errs = append(errs, field.NotSupported(fldPath.Child("labelKeys"), cfg.LabelKeys, persistentVolumeLabelKeys))
	}
	if !slices.Contains(persistentVolumeLabelNodeAffinities, cfg.NodeAffinity) {
		errs = append(errs, field.NotSupported(fldPath.Child("nodeAffinity"), cfg.NodeAffinity, persistentVolumeLabelNodeAffinities))
	}
	if !slices.Contains(persistentVolumeLabelUnresolved, cfg.Unresolved) {
		errs = append(errs, field.NotSupported(fldPath.Child("unresolved"), cfg.Unresolved, persistentVolumeLabelUnresolved))
	}
	for i := range cfg.Rules {
		errs = append(errs, validatePersistentVolumeLabelRule(&cfg.Rules[i], fldPath.Child("rules").Index(i))...)
	}
	return errs
}

// validatePersistentVolumeLabelRule checks a rule: its source, its driver (a CSI rule's
// alone), its expression, and its zone when literal.
func validatePersistentVolumeLabelRule(rule *admission.PersistentVolumeLabelRule, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sources := admission.PersistentVolumeLabelSources(); !slices.Contains(sources, rule.Source) {
		errs = append(errs, field.NotSupported(fldPath.Child("source"), rule.Source, sources))
	}
	if rule.Driver != "" && rule.Source != admission.PersistentVolumeLabelSourceCSI {
		errs = append(errs, field.Invalid(fldPath.Child("driver"), rule.Driver, "only a CSI rule names a driver"))
	}
	_, err := regexp.Compile(rule.Match)
	if err != nil {
		errs = append(errs, field.Invalid(fldPath.Child("match"), rule.Match, err.Error()))
	}
	if rule.Zone == "" {
		errs = append(errs, field.Required(fldPath.Child("zone"), "the zone, or zones joined by \"__\"; it may use match's groups ($1, ${name})"))
	} else if err == nil && !strings.Contains(rule.Zone, "$") {
		// A literal zone is checked now; one that may use the expression's groups when the
		// plugin expands it.
		if _, err := volumehelpers.LabelZonesToList(rule.Zone); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("zone"), rule.Zone, err.Error()))
		}
	}
	return errs
}
