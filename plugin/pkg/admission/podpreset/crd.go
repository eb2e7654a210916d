package podpreset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"

	settingsv1alpha1 "github.com/portcullis-k8s/api/settings/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
)

const (
	// CRDName is the name of the CustomResourceDefinition that serves PodPreset.
	CRDName = "podpresets." + settingsv1alpha1.GroupName
	// SchemaHashAnnotation records which schema the CRD was last written with, so the plugin
	// updates it only when the schema changes.
	SchemaHashAnnotation = "settings.portcullis.io/schema-hash"
	// SchemaVersionAnnotation records the SchemaVersion of the server that wrote the CRD. A
	// server writes the CRD only over an older version's (or none), never over a newer one, so
	// two releases side by side (a rolling upgrade, an HA pair mid-swap) do not rewrite it in
	// turn. A CRD written before the annotation existed counts as version 0.
	SchemaVersionAnnotation = "settings.portcullis.io/schema-version"
	// SchemaKubernetesMinorAnnotation records the Kubernetes minor of the server that wrote
	// the CRD: the schema holds that minor's pod types (env, volumes, mounts), so a server of
	// a newer minor replaces it, and one of an older minor leaves it, whatever the schema
	// version. A CRD written before the annotation existed was written by a 1.37 server.
	SchemaKubernetesMinorAnnotation = "settings.portcullis.io/schema-kubernetes-minor"

	// SchemaVersion is this release's PodPreset CRD schema version. Raise it with every
	// change to what CRD() returns; TestSchemaVersionPinsTheSchema fails until it is raised.
	SchemaVersion = 1

	// approval: settings.k8s.io is a *.k8s.io group, which the API server serves from a CRD
	// only when the CRD says whether the API was approved.
	approval = "unapproved, restored by the Portcullis distribution: settings.k8s.io/v1alpha1 PodPreset was removed from Kubernetes in 1.20 (https://github.com/kubernetes/kubernetes/pull/94090)"

	// Bounds that keep the CEL rules' cost estimate finite; generous for any real preset.
	maxVolumes      = 256
	maxVolumeMounts = 256
	maxEnv          = 1024
	maxEnvFrom      = 256
	maxNameLength   = 63
)

// CRD returns the PodPreset CustomResourceDefinition, with its schema-hash annotation set.
func CRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	schema, err := podPresetSchema()
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name: CRDName,
			Annotations: map[string]string{
				apiextensionsv1.KubeAPIApprovedAnnotation: approval,
			},
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kube-apiserver-portcullis"},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: settingsv1alpha1.GroupName,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:   "podpresets",
				Singular: "podpreset",
				Kind:     "PodPreset",
				ListKind: "PodPresetList",
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    settingsv1alpha1.SchemeGroupVersion.Version,
				Served:  true,
				Storage: true,
				Schema:  &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Selector", Type: "string", JSONPath: ".spec.selector.matchLabels", Description: "The labels a pod needs for the preset to apply."},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
				},
			}},
		},
	}
	spec, err := json.Marshal(crd.Spec)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(spec)
	crd.Annotations[SchemaHashAnnotation] = hex.EncodeToString(sum[:8])
	crd.Annotations[SchemaVersionAnnotation] = strconv.Itoa(SchemaVersion)
	crd.Annotations[SchemaKubernetesMinorAnnotation] = kubecompat.Minor
	return crd, nil
}

func podPresetSchema() (*apiextensionsv1.JSONSchemaProps, error) {
	defs := generatedopenapi.GetOpenAPIDefinitions(func(path string) spec.Ref {
		return spec.MustCreateRef("#/definitions/" + path)
	})
	c := converter{defs: defs}
	selector := c.definition(metav1.LabelSelector{}.OpenAPIModelName())
	if c.err != nil {
		return nil, c.err
	}
	selector.Description = "Selector chooses the pods of the namespace the preset applies to. An empty or absent selector matches every pod."

	volume := c.definition(corev1.Volume{}.OpenAPIModelName())
	volume.Properties["name"] = withName(volume.Properties["name"], dns1123Label)
	mount := c.definition(corev1.VolumeMount{}.OpenAPIModelName())
	mount.Properties["name"] = withName(mount.Properties["name"], dns1123Label)
	env := c.definition(corev1.EnvVar{}.OpenAPIModelName())
	env.Properties["name"] = withName(env.Properties["name"], envVarName)
	envFrom := c.definition(corev1.EnvFromSource{}.OpenAPIModelName())
	if c.err != nil {
		return nil, c.err
	}

	list := func(description string, items apiextensionsv1.JSONSchemaProps, maxItems int64) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "array", Description: description, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}, MaxItems: &maxItems}
	}
	volumes := list("Volumes are added to the pod. Names are unique within the preset.", volume, maxVolumes)
	volumes.XListType = ptr("map")
	volumes.XListMapKeys = []string{"name"}
	mounts := list("VolumeMounts are appended to every init and regular container. Each names a volume of this preset; mount paths are unique within the preset.", mount, maxVolumeMounts)
	mounts.XListType = ptr("map")
	mounts.XListMapKeys = []string{"mountPath"}

	spec := apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: "PodPresetSpec is what a PodPreset injects, and into which pods.",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"selector":     selector,
			"env":          list("Env is appended to every init and regular container's environment.", env, maxEnv),
			"envFrom":      list("EnvFrom is appended to every init and regular container's envFrom.", envFrom, maxEnvFrom),
			"volumes":      volumes,
			"volumeMounts": mounts,
		},
		XValidations: apiextensionsv1.ValidationRules{
			{
				Rule:    "[has(self.env) && size(self.env) > 0, has(self.envFrom) && size(self.envFrom) > 0, has(self.volumes) && size(self.volumes) > 0, has(self.volumeMounts) && size(self.volumeMounts) > 0].exists(set, set)",
				Message: "at least one of env, envFrom, volumes or volumeMounts must be set",
			},
			{
				Rule:      "!has(self.volumeMounts) || self.volumeMounts.all(m, has(self.volumes) && self.volumes.exists(v, v.name == m.name))",
				Message:   "each volumeMount must name a volume defined in this preset's volumes",
				FieldPath: ".volumeMounts",
				Reason:    ptr(apiextensionsv1.FieldValueInvalid),
			},
		},
	}
	return &apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: "PodPreset injects environment variables, volumes and volume mounts into the pods of its namespace that its selector matches, when they are created.",
		Required:    []string{"spec"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string", Description: "APIVersion defines the versioned schema of this representation of an object."},
			"kind":       {Type: "string", Description: "Kind is a string value representing the REST resource this object represents."},
			"metadata":   {Type: "object"},
			"spec":       spec,
		},
	}, nil
}

const (
	dns1123Label = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// envVarName is what the API server accepts for environment variable names: printable
	// ASCII without '='.
	envVarName = `^[ -<>-~]+$`
)

func withName(s apiextensionsv1.JSONSchemaProps, pattern string) apiextensionsv1.JSONSchemaProps {
	s.Pattern = pattern
	s.MinLength = ptr(int64(1))
	if pattern == dns1123Label {
		s.MaxLength = ptr(int64(maxNameLength))
	}
	return s
}

// converter turns upstream's generated OpenAPI definitions into a structural CRD schema.
type converter struct {
	defs map[string]common.OpenAPIDefinition
	err  error
}

// Definitions whose Go types marshal to something other than their struct shape.
var specialDefinitions = map[string]apiextensionsv1.JSONSchemaProps{
	intstr.IntOrString{}.OpenAPIModelName():   {XIntOrString: true},
	resource.Quantity{}.OpenAPIModelName():    {XIntOrString: true, Pattern: `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`},
	metav1.Time{}.OpenAPIModelName():          {Type: "string", Format: "date-time"},
	metav1.MicroTime{}.OpenAPIModelName():     {Type: "string", Format: "date-time"},
	metav1.FieldsV1{}.OpenAPIModelName():      {Type: "object", XPreserveUnknownFields: ptr(true)},
	runtime.RawExtension{}.OpenAPIModelName(): {Type: "object", XPreserveUnknownFields: ptr(true)},
}

func (c *converter) definition(name string) apiextensionsv1.JSONSchemaProps {
	if special, ok := specialDefinitions[name]; ok {
		return special
	}
	def, ok := c.defs[name]
	if !ok {
		c.fail(fmt.Errorf("no OpenAPI definition for %s", name))
		return apiextensionsv1.JSONSchemaProps{}
	}
	return c.schema(def.Schema, name)
}

func (c *converter) schema(s spec.Schema, where string) apiextensionsv1.JSONSchemaProps {
	if ref := s.Ref.String(); ref != "" {
		out := c.definition(strings.TrimPrefix(ref, "#/definitions/"))
		if s.Description != "" {
			out.Description = s.Description
		}
		return out
	}
	// allOf with a single reference is how the generator attaches a description to a ref.
	if len(s.AllOf) == 1 && len(s.Properties) == 0 {
		out := c.schema(s.AllOf[0], where)
		if s.Description != "" {
			out.Description = s.Description
		}
		return out
	}
	out := apiextensionsv1.JSONSchemaProps{Description: s.Description, Format: s.Format}
	switch {
	case len(s.Type) == 1:
		out.Type = s.Type[0]
	case len(s.Properties) > 0:
		out.Type = "object"
	default:
		// No shape the schema can state: keep whatever the user sends.
		return apiextensionsv1.JSONSchemaProps{Description: s.Description, Type: "object", XPreserveUnknownFields: ptr(true)}
	}
	if len(s.Properties) > 0 {
		out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		for name, prop := range s.Properties {
			out.Properties[name] = c.schema(prop, where+"."+name)
		}
		out.Required = s.Required
	}
	if s.Items != nil && s.Items.Schema != nil {
		items := c.schema(*s.Items.Schema, where+"[]")
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		values := c.schema(*s.AdditionalProperties.Schema, where+"{}")
		out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &values}
	}
	for _, value := range s.Enum {
		raw, err := json.Marshal(value)
		if err != nil {
			c.fail(fmt.Errorf("%s: enum value %v: %w", where, value, err))
			continue
		}
		out.Enum = append(out.Enum, apiextensionsv1.JSON{Raw: raw})
	}
	return out
}

func (c *converter) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

func ptr[T any](v T) *T { return &v }
