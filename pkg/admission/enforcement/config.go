package enforcement

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverapiv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	apiserverapiv1alpha1 "k8s.io/apiserver/pkg/apis/apiserver/v1alpha1"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

// EntryName is the name of the admission config file's entry that holds the
// EnforcementConfiguration. No plugin has this name, so a stock server never reads it.
const EntryName = "EnforcementModes"

// refused lists the plugins whose mode cannot be changed, and why (see the package doc).
var refused = map[string]string{
	"PodSecurity":                          "it has enforce, warn and audit modes of its own (PodSecurityConfiguration defaults and namespace labels)",
	"ValidatingAdmissionPolicy":            "it has validationActions Deny, Warn and Audit of its own, per binding",
	"ValidatingAdmissionWebhook":           "each webhook has a failurePolicy of its own and can return warnings itself, and a webhook's denial may be what protects the server",
	"MutatingAdmissionWebhook":             "it is mutating, and each webhook has a failurePolicy of its own",
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

// admissionConfigScheme decodes the admission config file exactly as upstream's
// k8s.io/apiserver/pkg/server/options does: the same kinds, strict.
var admissionConfigScheme = runtime.NewScheme()

// enforcementScheme holds our kinds; only EnforcementConfiguration is expected here.
var enforcementScheme = runtime.NewScheme()

func init() {
	utilruntime.Must(apiserverapi.AddToScheme(admissionConfigScheme))
	utilruntime.Must(apiserverapiv1alpha1.AddToScheme(admissionConfigScheme))
	utilruntime.Must(apiserverapiv1.AddToScheme(admissionConfigScheme))
	utilruntime.Must(admissionv1alpha1.AddToScheme(enforcementScheme))
}

// Load reads the EnforcementModes entry of the admission config file (the value of
// --admission-control-config-file; "" for none) and returns the decorator it configures. A
// file without the entry — a stock file, a legacy unversioned file — gives a decorator that
// changes nothing. Errors name the file and the field.
func Load(admissionConfigFile string) (*Decorator, error) {
	registerMetrics()
	if admissionConfigFile == "" {
		return &Decorator{}, nil
	}
	data, err := os.ReadFile(admissionConfigFile)
	if err != nil {
		return nil, fmt.Errorf("reading the admission config file: %w", err)
	}
	decoded, err := runtime.Decode(serializer.NewCodecFactory(admissionConfigScheme, serializer.EnableStrict).UniversalDecoder(), data)
	if err != nil {
		// Files without a kind are upstream's legacy formats, which cannot hold our entry;
		// upstream accepts or refuses them on its own.
		if runtime.IsMissingVersion(err) || runtime.IsMissingKind(err) || runtime.IsNotRegisteredError(err) {
			return &Decorator{}, nil
		}
		return nil, fmt.Errorf("%s: %w", admissionConfigFile, err)
	}
	config, ok := decoded.(*apiserverapi.AdmissionConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected kind %T", admissionConfigFile, decoded)
	}
	at := -1
	for i, entry := range config.Plugins {
		if entry.Name != EntryName {
			continue
		}
		if at >= 0 {
			return nil, fmt.Errorf("%s: plugins[%d]: the entry %s is listed twice (also plugins[%d])", admissionConfigFile, i, EntryName, at)
		}
		at = i
	}
	if at < 0 {
		return &Decorator{}, nil
	}
	entry := config.Plugins[at]
	source := fmt.Sprintf("%s: plugins[%d] (%s)", admissionConfigFile, at, EntryName)
	path := field.NewPath("configuration")
	switch {
	case entry.Configuration != nil:
		data = entry.Configuration.Raw
	case entry.Path != "":
		file := entry.Path
		if !filepath.IsAbs(file) {
			// Relative to the admission config file, as upstream resolves it.
			file = filepath.Join(filepath.Dir(admissionConfigFile), file)
		}
		if data, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("%s: path: %w", source, err)
		}
		source = fmt.Sprintf("%s: path %s", source, file)
		path = nil
	default:
		return nil, fmt.Errorf("%s: neither configuration nor path is set", source)
	}
	enforcement, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if errs := Validate(enforcement, path); len(errs) != 0 {
		return nil, fmt.Errorf("%s: %w", source, errs.ToAggregate())
	}
	return newDecorator(admissionConfigFile, enforcement), nil
}

func decode(data []byte) (*admissionv1alpha1.EnforcementConfiguration, error) {
	obj, gvk, err := serializer.NewCodecFactory(enforcementScheme, serializer.EnableStrict).UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	config, ok := obj.(*admissionv1alpha1.EnforcementConfiguration)
	if !ok {
		return nil, fmt.Errorf("kind %s: want %s", gvk, admissionv1alpha1.SchemeGroupVersion.WithKind("EnforcementConfiguration"))
	}
	return config, nil
}

// Validate checks an EnforcementConfiguration: names set, unique, neither refused nor
// unusable in an annotation key; modes Deny alone, or Warn and/or Audit. fldPath is where
// the configuration sits in its file (nil for a file of its own).
func Validate(config *admissionv1alpha1.EnforcementConfiguration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i, p := range config.Plugins {
		at := fldPath.Child("plugins").Index(i)
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
		modes := at.Child("modes")
		if len(p.Modes) == 0 {
			errs = append(errs, field.Required(modes, "Deny, or Warn and/or Audit"))
			continue
		}
		for j, m := range p.Modes {
			switch m {
			case admissionv1alpha1.EnforcementModeDeny, admissionv1alpha1.EnforcementModeWarn, admissionv1alpha1.EnforcementModeAudit:
			default:
				errs = append(errs, field.NotSupported(modes.Index(j), m, []admissionv1alpha1.EnforcementMode{
					admissionv1alpha1.EnforcementModeDeny, admissionv1alpha1.EnforcementModeWarn, admissionv1alpha1.EnforcementModeAudit}))
				continue
			}
			if slices.Index(p.Modes, m) != j {
				errs = append(errs, field.Duplicate(modes.Index(j), m))
			}
		}
		if slices.Contains(p.Modes, admissionv1alpha1.EnforcementModeDeny) && len(p.Modes) > 1 {
			errs = append(errs, field.Invalid(modes, p.Modes, "Deny cannot be combined with Warn or Audit"))
		}
	}
	return errs
}

// annotationKey is the audit annotation a plugin's would-be denials are recorded under.
// Upstream's AddAnnotation requires a qualified name with a DNS-subdomain prefix, and
// prefixes nothing itself.
func annotationKey(plugin string) string {
	return strings.ToLower(plugin) + ".admission.portcullis.io/would-deny"
}

// errNotValidating is recorded when a configured plugin turns out to have no validating
// phase; Decorate cannot return an error, so Err reports it.
var errNotValidating = errors.New("it has no validating phase, and only a validating phase's denials can be softened")
