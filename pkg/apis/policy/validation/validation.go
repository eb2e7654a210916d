// Package validation validates PodSecurityPolicy objects as Kubernetes 1.24 did, so every
// policy 1.24 accepted is accepted here, with the volume kinds added since (image).
package validation

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/kubernetes/pkg/apis/core"
	apivalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

// ValidatePodSecurityPolicyName checks a PodSecurityPolicy name: a DNS subdomain.
var ValidatePodSecurityPolicyName = apimachineryvalidation.NameIsDNSSubdomain

// seccompAllowAny in the allowed seccomp profiles annotation allows every profile.
const seccompAllowAny = "*"

// localhostPrefix begins a localhost profile name, seccomp's and AppArmor's alike.
const localhostPrefix = "localhost/"

// allFSTypes is every volume kind a policy may name, "*" aside.
var allFSTypes = sets.New(
	policy.AzureFile, policy.Flocker, policy.FlexVolume, policy.HostPath, policy.EmptyDir,
	policy.GCEPersistentDisk, policy.AWSElasticBlockStore, policy.GitRepo, policy.Secret,
	policy.NFS, policy.ISCSI, policy.Glusterfs, policy.PersistentVolumeClaim, policy.RBD,
	policy.Cinder, policy.CephFS, policy.DownwardAPI, policy.FC, policy.ConfigMap,
	policy.VsphereVolume, policy.Quobyte, policy.AzureDisk, policy.PhotonPersistentDisk,
	policy.StorageOS, policy.Projected, policy.PortworxVolume, policy.ScaleIO, policy.CSI,
	policy.Ephemeral, policy.Image,
)

// ValidatePodSecurityPolicy validates a PodSecurityPolicy being created.
func ValidatePodSecurityPolicy(psp *policy.PodSecurityPolicy) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&psp.ObjectMeta, false, ValidatePodSecurityPolicyName, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidatePodSecurityPolicySpecificAnnotations(psp.Annotations, field.NewPath("metadata", "annotations"))...)
	allErrs = append(allErrs, ValidatePodSecurityPolicySpec(&psp.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidatePodSecurityPolicyUpdate validates an update of a PodSecurityPolicy. The spec is
// validated as on create: no field is immutable.
func ValidatePodSecurityPolicyUpdate(oldPSP, newPSP *policy.PodSecurityPolicy) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newPSP.ObjectMeta, &oldPSP.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidatePodSecurityPolicySpecificAnnotations(newPSP.Annotations, field.NewPath("metadata", "annotations"))...)
	allErrs = append(allErrs, ValidatePodSecurityPolicySpec(&newPSP.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidatePodSecurityPolicySpec validates a PodSecurityPolicySpec found at fldPath.
func ValidatePodSecurityPolicySpec(spec *policy.PodSecurityPolicySpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateRunAsUser(fldPath.Child("runAsUser"), &spec.RunAsUser)...)
	allErrs = append(allErrs, validateRunAsGroup(fldPath.Child("runAsGroup"), spec.RunAsGroup)...)
	allErrs = append(allErrs, validateSELinux(fldPath.Child("seLinux"), &spec.SELinux)...)
	allErrs = append(allErrs, validateSupplementalGroups(fldPath.Child("supplementalGroups"), &spec.SupplementalGroups)...)
	allErrs = append(allErrs, validateFSGroup(fldPath.Child("fsGroup"), &spec.FSGroup)...)
	allErrs = append(allErrs, validateVolumes(fldPath.Child("volumes"), spec.Volumes)...)
	if len(spec.RequiredDropCapabilities) > 0 && hasCap(policy.AllowAllCapabilities, spec.AllowedCapabilities) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("requiredDropCapabilities"), spec.RequiredDropCapabilities,
			"must be empty when all capabilities are allowed by a wildcard"))
	}
	allErrs = append(allErrs, validateCapsAgainstDrops(spec.RequiredDropCapabilities, spec.DefaultAddCapabilities, fldPath, "defaultAddCapabilities")...)
	allErrs = append(allErrs, validateCapsAgainstDrops(spec.RequiredDropCapabilities, spec.AllowedCapabilities, fldPath, "allowedCapabilities")...)
	allErrs = append(allErrs, validateDefaultAllowPrivilegeEscalation(fldPath.Child("defaultAllowPrivilegeEscalation"), spec.DefaultAllowPrivilegeEscalation, spec.AllowPrivilegeEscalation)...)
	allErrs = append(allErrs, validateAllowedProcMountTypes(fldPath.Child("allowedProcMountTypes"), spec.AllowedProcMountTypes)...)
	allErrs = append(allErrs, validateAllowedHostPaths(fldPath.Child("allowedHostPaths"), spec.AllowedHostPaths)...)
	allErrs = append(allErrs, validateAllowedFlexVolumes(fldPath.Child("allowedFlexVolumes"), spec.AllowedFlexVolumes)...)
	allErrs = append(allErrs, validateAllowedCSIDrivers(fldPath.Child("allowedCSIDrivers"), spec.AllowedCSIDrivers)...)
	allErrs = append(allErrs, validateSysctls(fldPath.Child("forbiddenSysctls"), spec.ForbiddenSysctls)...)
	allErrs = append(allErrs, validateSysctls(fldPath.Child("allowedUnsafeSysctls"), spec.AllowedUnsafeSysctls)...)
	allErrs = append(allErrs, validateSysctlListsDoNotOverlap(fldPath.Child("allowedUnsafeSysctls"), fldPath.Child("forbiddenSysctls"), spec.AllowedUnsafeSysctls, spec.ForbiddenSysctls)...)
	allErrs = append(allErrs, validateRuntimeClassStrategy(fldPath.Child("runtimeClass"), spec.RuntimeClass)...)
	return allErrs
}

// ValidatePodSecurityPolicySpecificAnnotations validates the seccomp and AppArmor profile
// annotations of a PodSecurityPolicy found at fldPath.
func ValidatePodSecurityPolicySpecificAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList

	if p := annotations[policy.AppArmorDefaultProfileAnnotationKey]; p != "" {
		if err := apivalidation.ValidateAppArmorProfileFormat(p); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(policy.AppArmorDefaultProfileAnnotationKey), p, err.Error()))
		} else if p == localhostPrefix {
			// As for seccomp below: a default no pod could carry.
			allErrs = append(allErrs, field.Invalid(fldPath.Key(policy.AppArmorDefaultProfileAnnotationKey), p, "a localhost profile needs a name after localhost/"))
		}
	}
	if allowed := annotations[policy.AppArmorAllowedProfilesAnnotationKey]; allowed != "" {
		for _, p := range strings.Split(allowed, ",") {
			if err := apivalidation.ValidateAppArmorProfileFormat(p); err != nil {
				allErrs = append(allErrs, field.Invalid(fldPath.Key(policy.AppArmorAllowedProfilesAnnotationKey), allowed, err.Error()))
			}
		}
	}

	if p := annotations[policy.SeccompDefaultProfileAnnotationKey]; p != "" {
		path := fldPath.Key(policy.SeccompDefaultProfileAnnotationKey)
		allErrs = append(allErrs, apivalidation.ValidateSeccompProfile(p, path)...)
		// 1.24 accepted "localhost/" with no profile name, then every pod it defaulted failed
		// pod validation: the policy could admit nothing. Refused here, where it is written.
		if p == localhostPrefix {
			allErrs = append(allErrs, field.Invalid(path, p, "a localhost profile needs a name after localhost/"))
		}
	}
	if allowed := annotations[policy.SeccompAllowedProfilesAnnotationKey]; allowed != "" {
		for _, p := range strings.Split(allowed, ",") {
			if p == seccompAllowAny {
				continue
			}
			allErrs = append(allErrs, apivalidation.ValidateSeccompProfile(p, fldPath.Key(policy.SeccompAllowedProfilesAnnotationKey))...)
		}
	}
	return allErrs
}

func validateSELinux(fldPath *field.Path, seLinux *policy.SELinuxStrategyOptions) field.ErrorList {
	supported := []policy.SELinuxStrategy{policy.SELinuxStrategyMustRunAs, policy.SELinuxStrategyRunAsAny}
	if !sets.New(supported...).Has(seLinux.Rule) {
		return field.ErrorList{field.NotSupported(fldPath.Child("rule"), seLinux.Rule, supported)}
	}
	return nil
}

func validateRunAsUser(fldPath *field.Path, runAsUser *policy.RunAsUserStrategyOptions) field.ErrorList {
	var allErrs field.ErrorList
	supported := []policy.RunAsUserStrategy{policy.RunAsUserStrategyMustRunAs, policy.RunAsUserStrategyMustRunAsNonRoot, policy.RunAsUserStrategyRunAsAny}
	if !sets.New(supported...).Has(runAsUser.Rule) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("rule"), runAsUser.Rule, supported))
	}
	allErrs = append(allErrs, validateIDRanges(fldPath.Child("ranges"), runAsUser.Ranges)...)
	return allErrs
}

func validateRunAsGroup(fldPath *field.Path, runAsGroup *policy.RunAsGroupStrategyOptions) field.ErrorList {
	if runAsGroup == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch runAsGroup.Rule {
	case policy.RunAsGroupStrategyRunAsAny:
		if len(runAsGroup.Ranges) != 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("ranges"), runAsGroup.Ranges, "must be empty when the rule is RunAsAny"))
		}
	case policy.RunAsGroupStrategyMustRunAs, policy.RunAsGroupStrategyMayRunAs:
		if len(runAsGroup.Ranges) == 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("ranges"), runAsGroup.Ranges, "must provide at least one range"))
		}
		allErrs = append(allErrs, validateIDRanges(fldPath.Child("ranges"), runAsGroup.Ranges)...)
	default:
		supported := []policy.RunAsGroupStrategy{policy.RunAsGroupStrategyMustRunAs, policy.RunAsGroupStrategyRunAsAny, policy.RunAsGroupStrategyMayRunAs}
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("rule"), runAsGroup.Rule, supported))
	}
	return allErrs
}

func validateFSGroup(fldPath *field.Path, options *policy.FSGroupStrategyOptions) field.ErrorList {
	var allErrs field.ErrorList
	supported := []policy.FSGroupStrategyType{policy.FSGroupStrategyMustRunAs, policy.FSGroupStrategyMayRunAs, policy.FSGroupStrategyRunAsAny}
	if !sets.New(supported...).Has(options.Rule) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("rule"), options.Rule, supported))
	}
	allErrs = append(allErrs, validateIDRanges(fldPath.Child("ranges"), options.Ranges)...)
	return allErrs
}

func validateSupplementalGroups(fldPath *field.Path, options *policy.SupplementalGroupsStrategyOptions) field.ErrorList {
	var allErrs field.ErrorList
	supported := []policy.SupplementalGroupsStrategyType{policy.SupplementalGroupsStrategyMustRunAs, policy.SupplementalGroupsStrategyMayRunAs, policy.SupplementalGroupsStrategyRunAsAny}
	if !sets.New(supported...).Has(options.Rule) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("rule"), options.Rule, supported))
	}
	allErrs = append(allErrs, validateIDRanges(fldPath.Child("ranges"), options.Ranges)...)
	return allErrs
}

// validateIDRanges checks that every range is non-negative and not inverted.
func validateIDRanges(fldPath *field.Path, ranges []policy.IDRange) field.ErrorList {
	var allErrs field.ErrorList
	for i, rng := range ranges {
		idxPath := fldPath.Index(i)
		if rng.Min < 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("min"), rng.Min, "min cannot be negative"))
		}
		if rng.Max < 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("max"), rng.Max, "max cannot be negative"))
		}
		if rng.Min > rng.Max {
			allErrs = append(allErrs, field.Invalid(idxPath, rng, "min cannot be greater than max"))
		}
	}
	return allErrs
}

func validateVolumes(fldPath *field.Path, volumes []policy.FSType) field.ErrorList {
	var allErrs field.ErrorList
	for i, v := range volumes {
		if v != policy.All && !allFSTypes.Has(v) {
			allowed := append(sets.List(allFSTypes), policy.All)
			allErrs = append(allErrs, field.NotSupported(fldPath.Index(i), v, allowed))
		}
	}
	return allErrs
}

func validateDefaultAllowPrivilegeEscalation(fldPath *field.Path, defaultAllow *bool, allow bool) field.ErrorList {
	if defaultAllow != nil && *defaultAllow && !allow {
		return field.ErrorList{field.Invalid(fldPath, *defaultAllow,
			"cannot be true when allowPrivilegeEscalation is false")}
	}
	return nil
}

func validateAllowedProcMountTypes(fldPath *field.Path, types []core.ProcMountType) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range types {
		if err := apivalidation.ValidateProcMountType(fldPath.Index(i), t); err != nil {
			allErrs = append(allErrs, err)
		}
	}
	return allErrs
}

// validateAllowedHostPaths requires a path prefix without ".." components. As in 1.24,
// checking stops at the first empty prefix.
func validateAllowedHostPaths(fldPath *field.Path, paths []policy.AllowedHostPath) field.ErrorList {
	var allErrs field.ErrorList
	for i, target := range paths {
		if target.PathPrefix == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("pathPrefix"), "must not be empty"))
			break
		}
		for _, item := range strings.Split(filepath.ToSlash(target.PathPrefix), "/") {
			if item == ".." {
				allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("pathPrefix"), target.PathPrefix, "must not contain '..'"))
				break
			}
		}
	}
	return allErrs
}

func validateAllowedFlexVolumes(fldPath *field.Path, flexVolumes []policy.AllowedFlexVolume) field.ErrorList {
	var allErrs field.ErrorList
	for i, fv := range flexVolumes {
		if fv.Driver == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("driver"), "must specify a driver"))
		}
	}
	return allErrs
}

func validateAllowedCSIDrivers(fldPath *field.Path, drivers []policy.AllowedCSIDriver) field.ErrorList {
	var allErrs field.ErrorList
	for i, d := range drivers {
		if d.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("name"), "must specify a driver name"))
		}
	}
	return allErrs
}

// sysctlPatternSegmentFmt is the last segment of a sysctl pattern: it may end in "*".
const sysctlPatternSegmentFmt = "([a-z0-9][-_a-z0-9]*)?[a-z0-9*]"

// SysctlContainSlashPatternFmt is the syntax of a sysctl pattern in a policy: sysctl name
// segments separated by "." or "/", the last of which may end in "*".
const SysctlContainSlashPatternFmt = "(" + apivalidation.SysctlSegmentFmt + "[\\./])*" + sysctlPatternSegmentFmt

var sysctlContainSlashPatternRegexp = regexp.MustCompile("^" + SysctlContainSlashPatternFmt + "$")

// IsValidSysctlPattern reports whether name is a valid sysctl pattern of a policy.
func IsValidSysctlPattern(name string) bool {
	if len(name) > apivalidation.SysctlMaxLength {
		return false
	}
	return sysctlContainSlashPatternRegexp.MatchString(name)
}

func validateSysctls(fldPath *field.Path, sysctls []string) field.ErrorList {
	var allErrs field.ErrorList
	coversAll := false
	for i, s := range sysctls {
		switch {
		case s == "":
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), s, "empty sysctl not allowed"))
		case !IsValidSysctlPattern(s):
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), s,
				fmt.Sprintf("must have at most %d characters and match regex %s", apivalidation.SysctlMaxLength, SysctlContainSlashPatternFmt)))
		case s[0] == '*':
			coversAll = true
		}
	}
	if coversAll && len(sysctls) > 1 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("items"), "if '*' is present, must not specify other sysctls"))
	}
	return allErrs
}

// validateSysctlListsDoNotOverlap rejects an allowed unsafe sysctl (or pattern) that a
// forbidden one (or pattern) also covers, reporting it on the broader-matched side.
func validateSysctlListsDoNotOverlap(allowedPath, forbiddenPath *field.Path, allowed, forbidden []string) field.ErrorList {
	var allErrs field.ErrorList
	for i, a := range allowed {
		aPrefix, aIsPattern := strings.CutSuffix(a, "*")
		for j, f := range forbidden {
			fPrefix, fIsPattern := strings.CutSuffix(f, "*")
			switch {
			case aIsPattern && fIsPattern:
				if strings.HasPrefix(aPrefix, fPrefix) {
					allErrs = append(allErrs, field.Invalid(allowedPath.Index(i), a, fmt.Sprintf("sysctl overlaps with %v", f)))
				} else if strings.HasPrefix(fPrefix, aPrefix) {
					allErrs = append(allErrs, field.Invalid(forbiddenPath.Index(j), f, fmt.Sprintf("sysctl overlaps with %v", a)))
				}
			case aIsPattern:
				if strings.HasPrefix(f, aPrefix) {
					allErrs = append(allErrs, field.Invalid(forbiddenPath.Index(j), f, fmt.Sprintf("sysctl overlaps with %v", a)))
				}
			case fIsPattern:
				if strings.HasPrefix(a, fPrefix) {
					allErrs = append(allErrs, field.Invalid(allowedPath.Index(i), a, fmt.Sprintf("sysctl overlaps with %v", f)))
				}
			default:
				if a == f {
					allErrs = append(allErrs, field.Invalid(allowedPath.Index(i), a, fmt.Sprintf("sysctl overlaps with %v", f)))
				}
			}
		}
	}
	return allErrs
}

// validateCapsAgainstDrops rejects capabilities of capsToCheck (the spec's field name) that
// must also be dropped.
func validateCapsAgainstDrops(requiredDrops, capsToCheck []core.Capability, specPath *field.Path, name string) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range capsToCheck {
		if hasCap(c, requiredDrops) {
			allErrs = append(allErrs, field.Invalid(specPath.Child(name).Index(i), c,
				fmt.Sprintf("capability is listed in %s and requiredDropCapabilities", name)))
		}
	}
	return allErrs
}

func validateRuntimeClassStrategy(fldPath *field.Path, rc *policy.RuntimeClassStrategyOptions) field.ErrorList {
	if rc == nil {
		return nil
	}
	var allErrs field.ErrorList
	allowedPath := fldPath.Child("allowedRuntimeClassNames")
	allowed := sets.New[string]()
	for i, name := range rc.AllowedRuntimeClassNames {
		if name != policy.AllowAllRuntimeClassNames {
			allErrs = append(allErrs, apivalidation.ValidateRuntimeClassName(name, allowedPath.Index(i))...)
		}
		if allowed.Has(name) {
			allErrs = append(allErrs, field.Duplicate(allowedPath.Index(i), name))
		}
		allowed.Insert(name)
	}
	if rc.DefaultRuntimeClassName != nil {
		name := *rc.DefaultRuntimeClassName
		allErrs = append(allErrs, apivalidation.ValidateRuntimeClassName(name, fldPath.Child("defaultRuntimeClassName"))...)
		if !allowed.Has(name) && !allowed.Has(policy.AllowAllRuntimeClassNames) {
			allErrs = append(allErrs, field.Required(allowedPath, fmt.Sprintf("default %q must be allowed", name)))
		}
	}
	if allowed.Has(policy.AllowAllRuntimeClassNames) && len(rc.AllowedRuntimeClassNames) > 1 {
		allErrs = append(allErrs, field.Invalid(allowedPath, rc.AllowedRuntimeClassNames, "if '*' is present, must not specify other RuntimeClass names"))
	}
	return allErrs
}

func hasCap(needle core.Capability, haystack []core.Capability) bool {
	for _, c := range haystack {
		if c == needle {
			return true
		}
	}
	return false
}
