package podpreset

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	settingsv1alpha1 "github.com/portcullis-k8s/api/settings/v1alpha1"
)

// MaxNameLength is the longest PodPreset name whose applied-annotation key,
// AppliedAnnotationPrefix + name, is still a valid annotation key: its name part,
// "podpreset-" + name, may be at most 63 characters. Upstream's alpha accepted longer names
// and then failed every pod the preset matched.
// (A test holds this to the API server's own check of annotation keys.)
const MaxNameLength = 63 - len("podpreset-")

// validatePreset returns every reason a PodPreset would fail the pods it matches, as the 1.19
// API server's validation did: the selector is a valid label selector, and volumes, env,
// envFrom and volumeMounts pass the pod validators the API server applies to a new pod, with
// each volumeMount naming one of the preset's volumes. The name must fit the applied
// annotation. spec holds the preset's contents compiled to internal types.
func validatePreset(name string, selector *metav1.LabelSelector, spec *api.PodSpec) field.ErrorList {
	var errs field.ErrorList
	if len(name) > MaxNameLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), name, fmt.Sprintf(
			"must be no more than %d characters, so that the annotation %s<name> it sets on pods is a valid key", MaxNameLength, AppliedAnnotationPrefix)))
	}
	specPath := field.NewPath("spec")
	errs = append(errs, metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, specPath.Child("selector"))...)

	c := &spec.Containers[0]
	if len(spec.Volumes) == 0 && len(c.Env) == 0 && len(c.EnvFrom) == 0 && len(c.VolumeMounts) == 0 {
		errs = append(errs, field.Required(specPath, "at least one of env, envFrom, volumes or volumeMounts must be set"))
	}
	// The options the API server validates a new pod with, so that what passes here passes
	// there once merged.
	opts := podutil.GetValidationOptionsFromPodSpecAndMeta(spec, nil, nil, nil)
	volumes, volumeErrs := corevalidation.ValidateVolumes(spec.Volumes, nil, specPath.Child("volumes"), opts)
	errs = append(errs, volumeErrs...)
	errs = append(errs, corevalidation.ValidateEnv(c.Env, specPath.Child("env"), opts)...)
	errs = append(errs, corevalidation.ValidateEnvFrom(c.EnvFrom, specPath.Child("envFrom"), opts)...)
	errs = append(errs, corevalidation.ValidateVolumeMounts(c.VolumeMounts, nil, volumes, c, specPath.Child("volumeMounts"), opts)...)
	return errs
}

// Validate validates a PodPreset as the plugin does on CREATE and UPDATE.
func Validate(pp *settingsv1alpha1.PodPreset) field.ErrorList {
	spec, err := internalSpec(pp)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), "", err.Error())}
	}
	return validatePreset(pp.Name, &pp.Spec.Selector, spec)
}
