package enforcement

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

// refused lists the plugins whose mode cannot be changed, and why (see the package doc).
var refused = map[string]string{
	"PodSecurity":                          "it has enforce, warn and audit modes of its own (PodSecurityConfiguration defaults and namespace labels)",
	"ValidatingAdmissionPolicy":            "it has validationActions Deny, Warn and Audit of its own, per binding",
	"ValidatingAdmissionWebhook":           "each webhook has a failurePolicy of its own and can return warnings itself, and a webhook's denial may be what protects the server; soften one webhook at a time with webhookDispatch.validating.enforcementModes",
	"MutatingAdmissionWebhook":             "it is mutating, and each webhook has a failurePolicy of its own; make one webhook a shadow with webhookDispatch.mutating.enforcementModes",
	"MutatingAdmissionPolicy":              "it is mutating, and each policy has a failurePolicy of its own",
	"NamespaceLifecycle":                   "it keeps objects out of namespaces being deleted and protects the system namespaces; the server's own integrity depends on it",
	"NamespaceExists":                      "it keeps objects out of namespaces that do not exist, which nothing would ever delete",
	"NodeRestriction":                      "it limits each kubelet to its own Node and pods: the node isolation boundary",
	"ServiceAccount":                       "it keeps pods from using service accounts that do not exist and mirror pods from reaching tokens, secrets and config maps: a credential boundary",
	"OwnerReferencesPermissionEnforcement": "it stops users who may not delete an object from blocking its deletion: an authorization check",
	"CertificateApproval":                  "it checks who may approve certificate requests: admitting would be privilege escalation",
	"CertificateSigning":                   "it checks who may sign certificate requests: admitting would be privilege escalation",
	"CertificateSubjectRestriction":        "it refuses certificate requests for the system:masters group: admitting would be privilege escalation",
	"ClusterTrustBundleAttest":             "it checks who may attest ClusterTrustBundles for a signer: admitting would be privilege escalation",
	"Priority":                             "it reserves the system priority classes and values for the cluster's own components: admitting would let workloads preempt the control plane",
	"EventRateLimit":                       "its denial protects the API server and etcd from event floods",
	"ResourceQuota":                        "it charges usage as it admits: a request admitted over quota leaves capacity and quota accounting unprotected",
}

// RefusedReason reports why plugin's enforcement mode cannot be changed, or "" if it can.
func RefusedReason(plugin string) string { return refused[plugin] }

// RefusedPlugins names, sorted, the plugins whose enforcement mode cannot be changed.
func RefusedPlugins() []string {
	names := make([]string, 0, len(refused))
	for name := range refused {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// New returns the decorator that applies plugins' enforcement modes, validated with
// Validate; source names where they were read (file and entry), for errors. No plugins
// give a decorator that changes nothing.
func New(source string, plugins []admissionv1alpha1.PluginEnforcement) *Decorator {
	registerMetrics()
	return newDecorator(source, plugins)
}

// Validate checks plugins' enforcement modes: names set, unique, neither refused nor
// unusable in an annotation key; modes Deny alone, or Warn and/or Audit. fldPath is the
// list's place in its file.
func Validate(plugins []admissionv1alpha1.PluginEnforcement, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i, p := range plugins {
		at := fldPath.Index(i)
		switch {
		case p.Name == "":
			errs = append(errs, field.Required(at.Child("name"), "the plugin's name, as in --enable-admission-plugins"))
		case seen[p.Name] > 0:
			errs = append(errs, field.Duplicate(at.Child("name"), p.Name))
		case RefusedReason(p.Name) != "":
			errs = append(errs, field.Forbidden(at.Child("name"), fmt.Sprintf("%s's enforcement mode cannot be changed: %s", p.Name, RefusedReason(p.Name))))
		default:
			for _, msg := range validation.IsQualifiedName(annotationKey(p.Name)) {
				errs = append(errs, field.Invalid(at.Child("name"), p.Name, "not usable in the audit annotation key: "+msg))
			}
		}
		seen[p.Name]++
		errs = append(errs, ValidateModes(p.Modes, at.Child("modes"))...)
	}
	return errs
}

// ValidateModes checks one list of modes, at fldPath: Deny alone, or Warn and/or Audit.
// Webhooks' modes (the webhook dispatch's enforcementModes) are checked by it too.
func ValidateModes(modes []admissionv1alpha1.EnforcementMode, fldPath *field.Path) field.ErrorList {
	if len(modes) == 0 {
		return field.ErrorList{field.Required(fldPath, "Deny, or Warn and/or Audit")}
	}
	var errs field.ErrorList
	for j, m := range modes {
		switch m {
		case admissionv1alpha1.EnforcementModeDeny, admissionv1alpha1.EnforcementModeWarn, admissionv1alpha1.EnforcementModeAudit:
		default:
			errs = append(errs, field.NotSupported(fldPath.Index(j), m, []admissionv1alpha1.EnforcementMode{
				admissionv1alpha1.EnforcementModeDeny, admissionv1alpha1.EnforcementModeWarn, admissionv1alpha1.EnforcementModeAudit}))
			continue
		}
		if slices.Index(modes, m) != j {
			errs = append(errs, field.Duplicate(fldPath.Index(j), m))
		}
	}
	if slices.Contains(modes, admissionv1alpha1.EnforcementModeDeny) && len(modes) > 1 {
		errs = append(errs, field.Invalid(fldPath, modes, "Deny cannot be combined with Warn or Audit"))
	}
	return errs
}

// Soften is what a list of modes does to a denial: Warn and Audit say how it is recorded,
// Label names the combination (Warn, Audit or Warn+Audit) in metrics and messages. The zero
// value is Deny.
type Soften struct {
	Warn, Audit bool
	Label       string
}

// SoftenFor returns what validated modes do to a denial.
func SoftenFor(modes []admissionv1alpha1.EnforcementMode) Soften {
	var s Soften
	for _, mode := range modes {
		switch mode {
		case admissionv1alpha1.EnforcementModeWarn:
			s.Warn = true
		case admissionv1alpha1.EnforcementModeAudit:
			s.Audit = true
		}
	}
	switch {
	case s.Warn && s.Audit:
		s.Label = "Warn+Audit"
	case s.Warn:
		s.Label = "Warn"
	case s.Audit:
		s.Label = "Audit"
	}
	return s
}

// Softens says whether the modes soften anything (not Deny).
func (s Soften) Softens() bool { return s.Warn || s.Audit }

// annotationKey is the audit annotation a plugin's would-be denials are recorded under.
// Upstream's AddAnnotation requires a qualified name with a DNS-subdomain prefix, and
// prefixes nothing itself.
func annotationKey(plugin string) string {
	return strings.ToLower(plugin) + ".admission.portcullis.io/would-deny"
}

// errNotValidating is recorded when a configured plugin turns out to have no validating
// phase; Decorate cannot return an error, so Err reports it.
var errNotValidating = errors.New("it has no validating phase, and only a validating phase's denials can be softened")
