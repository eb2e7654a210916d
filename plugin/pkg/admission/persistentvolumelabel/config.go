package persistentvolumelabel

import (
	"io"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	volumehelpers "k8s.io/cloud-provider/volume/helpers"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/internal/configfile"
)

var (
	scheme = runtime.NewScheme()
	// Strict: a misspelt field in the admission config file is an error naming it, not a
	// silently ignored setting.
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
)

func init() {
	utilruntime.Must(admissionv1alpha1.AddToScheme(scheme))
}

// The values each setting takes, the first of each its default.
var (
	resolverNames = []admissionv1alpha1.PersistentVolumeLabelResolverName{
		admissionv1alpha1.PersistentVolumeLabelResolverCSITopology,
		admissionv1alpha1.PersistentVolumeLabelResolverNodes,
		admissionv1alpha1.PersistentVolumeLabelResolverVolumeID,
		admissionv1alpha1.PersistentVolumeLabelResolverRules,
	}
	labelKeysValues = []admissionv1alpha1.PersistentVolumeLabelKeys{
		admissionv1alpha1.PersistentVolumeLabelKeysGA,
		admissionv1alpha1.PersistentVolumeLabelKeysBeta,
		admissionv1alpha1.PersistentVolumeLabelKeysBoth,
	}
	nodeAffinityValues = []admissionv1alpha1.PersistentVolumeLabelNodeAffinity{
		admissionv1alpha1.PersistentVolumeLabelNodeAffinityAdd,
		admissionv1alpha1.PersistentVolumeLabelNodeAffinityNone,
	}
	unresolvedValues = []admissionv1alpha1.PersistentVolumeLabelUnresolved{
		admissionv1alpha1.PersistentVolumeLabelUnresolvedAdmit,
		admissionv1alpha1.PersistentVolumeLabelUnresolvedRefuse,
	}
)

// LoadConfiguration reads the plugin's configuration from the admission config file's
// reader, defaulted and validated. A nil or empty reader gives the defaults.
func LoadConfiguration(r io.Reader) (*admissionv1alpha1.PersistentVolumeLabelConfiguration, error) {
	return configfile.Load(PluginName, r, codecs.UniversalDeserializer(), &admissionv1alpha1.PersistentVolumeLabelConfiguration{},
		admissionv1alpha1.SchemeGroupVersion.WithKind("PersistentVolumeLabelConfiguration"), SetDefaults, Validate)
}

// CheckConfiguration reads the plugin's configuration as its factory does; the command
// runs it before the server dials etcd.
func CheckConfiguration(r io.Reader) error {
	_, err := LoadConfiguration(r)
	return err
}

// SetDefaults fills what the configuration leaves out.
func SetDefaults(cfg *admissionv1alpha1.PersistentVolumeLabelConfiguration) {
	if cfg.Resolvers == nil {
		cfg.Resolvers = resolverNames[:3:3]
		if len(cfg.Rules) > 0 {
			cfg.Resolvers = append(cfg.Resolvers, admissionv1alpha1.PersistentVolumeLabelResolverRules)
		}
	}
	if cfg.LabelKeys == "" {
		cfg.LabelKeys = labelKeysValues[0]
	}
	if cfg.NodeAffinity == "" {
		cfg.NodeAffinity = nodeAffinityValues[0]
	}
	if cfg.Unresolved == "" {
		cfg.Unresolved = unresolvedValues[0]
	}
}

// Validate checks a defaulted configuration; each error names its field.
func Validate(cfg *admissionv1alpha1.PersistentVolumeLabelConfiguration) field.ErrorList {
	var errs field.ErrorList
	resolversPath := field.NewPath("resolvers")
	if len(cfg.Resolvers) == 0 {
		errs = append(errs, field.Required(resolversPath, "at least one resolver, or leave it out for the default"))
	}
	seen := sets.New[admissionv1alpha1.PersistentVolumeLabelResolverName]()
	for i, r := range cfg.Resolvers {
		switch {
		case !slices.Contains(resolverNames, r):
			errs = append(errs, field.NotSupported(resolversPath.Index(i), r, resolverNames))
		case seen.Has(r):
			errs = append(errs, field.Duplicate(resolversPath.Index(i), r))
		case r == admissionv1alpha1.PersistentVolumeLabelResolverRules && len(cfg.Rules) == 0:
			errs = append(errs, field.Required(field.NewPath("rules"), "the Rules resolver needs at least one rule"))
		}
		seen.Insert(r)
	}
	if len(cfg.Rules) > 0 && !seen.Has(admissionv1alpha1.PersistentVolumeLabelResolverRules) {
		errs = append(errs, field.Invalid(resolversPath, cfg.Resolvers, "rules are given but the Rules resolver is not listed: they would never be used"))
	}
	if !slices.Contains(labelKeysValues, cfg.LabelKeys) {
		errs = append(errs, field.NotSupported(field.NewPath("labelKeys"), cfg.LabelKeys, labelKeysValues))
	}
	if !slices.Contains(nodeAffinityValues, cfg.NodeAffinity) {
		errs = append(errs, field.NotSupported(field.NewPath("nodeAffinity"), cfg.NodeAffinity, nodeAffinityValues))
	}
	if !slices.Contains(unresolvedValues, cfg.Unresolved) {
		errs = append(errs, field.NotSupported(field.NewPath("unresolved"), cfg.Unresolved, unresolvedValues))
	}
	for i := range cfg.Rules {
		_, ruleErrs := compileRule(cfg.Rules[i], field.NewPath("rules").Index(i))
		errs = append(errs, ruleErrs...)
	}
	return errs
}

// compileRule checks a rule and compiles its expression.
func compileRule(rule admissionv1alpha1.PersistentVolumeLabelRule, path *field.Path) (*compiledRule, field.ErrorList) {
	var errs field.ErrorList
	if _, ok := identifiers[rule.Source]; !ok {
		errs = append(errs, field.NotSupported(path.Child("source"), rule.Source, sourceNames()))
	}
	if rule.Driver != "" && rule.Source != admissionv1alpha1.PersistentVolumeLabelSourceCSI {
		errs = append(errs, field.Invalid(path.Child("driver"), rule.Driver, "only a CSI rule names a driver"))
	}
	re, err := regexp.Compile(rule.Match)
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("match"), rule.Match, err.Error()))
	}
	if rule.Zone == "" {
		errs = append(errs, field.Required(path.Child("zone"), "the zone, or zones joined by \"__\"; it may use match's groups ($1, ${name})"))
	} else if re != nil && !hasGroupReference(rule.Zone) {
		// A literal zone is checked now; one built from groups when it is expanded.
		if _, err := volumehelpers.LabelZonesToList(rule.Zone); err != nil {
			errs = append(errs, field.Invalid(path.Child("zone"), rule.Zone, err.Error()))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &compiledRule{rule: rule, match: re}, nil
}

// hasGroupReference reports whether a template may refer to a group of the expression.
func hasGroupReference(template string) bool {
	return strings.Contains(template, "$")
}

// ExampleConfig is a sample configuration for --admission-control-config-file: every
// setting at its default, and a rule for the operator's own volumes left as a comment.
const ExampleConfig = `apiVersion: admission.portcullis.io/v1alpha1
kind: PersistentVolumeLabelConfiguration
# resolvers defaults to [CSITopology, Nodes, VolumeID], and Rules after them when rules are given.
labelKeys: GA
nodeAffinity: Add
unresolved: Admit
# rules:
# - source: Cinder
#   match: '^(?P<zone>az-[0-9]+)-'
#   zone: '${zone}'
#   region: RegionOne
`

// RefusesWith says what the plugin refuses that stock admits under the configuration read
// from r: with unresolved: Refuse, in-tree zonal volumes whose zone no resolver finds (""
// otherwise). Preflight lists it.
func RefusesWith(r io.Reader) (string, error) {
	cfg, err := LoadConfiguration(r)
	if err != nil {
		return "", err
	}
	if cfg.Unresolved != admissionv1alpha1.PersistentVolumeLabelUnresolvedRefuse {
		return "", nil
	}
	return "PersistentVolumes of in-tree zonal volumes (GCE PD, AWS EBS) whose zone no resolver finds (unresolved: Refuse)", nil
}
