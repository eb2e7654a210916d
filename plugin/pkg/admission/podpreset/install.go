package podpreset

import (
	"context"
	"fmt"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
)

var crdResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

const (
	// establishPollInterval paces the start-up attempts: the plugin is built before the
	// server serves, so the first ones fail, and /readyz waits for the CRD.
	establishPollInterval = 250 * time.Millisecond
	// CRDCheckInterval paces the checks, once the CRD is established, that it is still there
	// and current: a deleted CRD is recreated within this interval and a write's latency.
	CRDCheckInterval = 5 * time.Second
)

// crdInstaller keeps the PodPreset CRD installed. It never deletes the CRD, so disabling the
// plugin keeps every preset.
type crdInstaller struct {
	client dynamic.Interface
	logger klog.Logger
	// checkInterval is CRDCheckInterval, but for tests.
	checkInterval time.Duration
	// lastFailure is the last failure logged, so a persistent one is logged once.
	lastFailure string
}

// run installs the CRD and waits until it is established, calls established once, then
// checks the CRD every checkInterval, recreating or updating it as needed, until ctx ends.
func (i *crdInstaller) run(ctx context.Context, established func()) {
	err := wait.PollUntilContextCancel(ctx, establishPollInterval, true, func(ctx context.Context) (bool, error) {
		return i.ensure(ctx), nil
	})
	if err != nil {
		return // ctx ended
	}
	i.logger.Info("The PodPreset CRD is established", "crd", CRDName)
	established()
	interval := i.checkInterval
	if interval == 0 {
		interval = CRDCheckInterval
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) { i.ensure(ctx) }, interval)
}

// ensure makes the CRD current and reports whether it is established, logging a failure
// at default verbosity with its reason.
func (i *crdInstaller) ensure(ctx context.Context) bool {
	crd, err := ensureCRD(ctx, i.client, i.logger)
	switch {
	case err == nil:
		i.lastFailure = ""
		return isEstablished(crd)
	case ctx.Err() != nil, utilnet.IsConnectionRefused(err):
		// Shutting down, or the server does not listen yet: neither is a failure to report.
	case err.Error() != i.lastFailure:
		i.lastFailure = err.Error()
		i.logger.Error(err, "Installing the PodPreset CRD failed; retrying", "crd", CRDName)
	}
	return false
}

// ensureCRD makes the cluster's PodPreset CRD the one CRD() describes, and returns it as
// stored.
func ensureCRD(ctx context.Context, client dynamic.Interface, logger klog.Logger) (*unstructured.Unstructured, error) {
	desired, err := CRD()
	if err != nil {
		return nil, err
	}
	crds := client.Resource(crdResource)
	existing, err := crds.Get(ctx, CRDName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj, err := toUnstructured(desired)
		if err != nil {
			return nil, err
		}
		created, err := crds.Create(ctx, obj, metav1.CreateOptions{FieldManager: "kube-apiserver-podpreset"})
		if apierrors.IsAlreadyExists(err) {
			// Another API server of the cluster created it first.
			return crds.Get(ctx, CRDName, metav1.GetOptions{})
		}
		if err != nil {
			return nil, fmt.Errorf("creating the PodPreset CRD: %w", err)
		}
		logger.Info("Installed the PodPreset CRD", "crd", CRDName)
		return created, nil
	}
	if err != nil {
		return nil, err
	}
	annotations := existing.GetAnnotations()
	// Up to date: the same schema, recorded as this minor's (two minors whose pod types
	// agree write the same schema; the newer still records itself).
	if annotations[SchemaHashAnnotation] == desired.Annotations[SchemaHashAnnotation] &&
		!installedSchema(annotations).olderThan(ourSchema()) {
		return existing, nil
	}
	// Written by another release: ours replaces it only when ours is newer (a newer
	// Kubernetes minor, or the same minor and a newer schema version), so that releases side
	// by side never rewrite it in turn.
	if installed := installedSchema(annotations); !installed.olderThan(ourSchema()) {
		logger.V(2).Info("The PodPreset CRD was written by another release with a schema as new or newer; leaving it",
			"crd", CRDName, "installedKubernetesMinor", installed.minor, "installedSchemaVersion", installed.version,
			"kubernetesMinor", kubecompat.Minor, "schemaVersion", SchemaVersion)
		return existing, nil
	}
	// Our schema is newer: replace spec, labels and annotations, keep everything else.
	obj, err := toUnstructured(desired)
	if err != nil {
		return nil, err
	}
	obj.SetResourceVersion(existing.GetResourceVersion())
	obj.SetUID(existing.GetUID())
	updated, err := crds.Update(ctx, obj, metav1.UpdateOptions{FieldManager: "kube-apiserver-podpreset"})
	if err != nil {
		return nil, fmt.Errorf("updating the PodPreset CRD: %w", err)
	}
	logger.Info("Updated the PodPreset CRD to the current schema", "crd", CRDName)
	return updated, nil
}

// installedSchemaVersion is the schema version the installed CRD's annotation records: 0
// when absent (earlier releases), and -1 when it is not a number, so that any release
// replaces it.
// schemaRelease orders the CRDs releases write: by Kubernetes minor, then schema version.
type schemaRelease struct {
	minor   *version.Version
	version int
}

func (s schemaRelease) olderThan(other schemaRelease) bool {
	if !s.minor.EqualTo(other.minor) {
		return s.minor.LessThan(other.minor)
	}
	return s.version < other.version
}

func ourSchema() schemaRelease {
	return schemaRelease{minor: version.MustParseGeneric(kubecompat.Minor), version: SchemaVersion}
}

// unannotatedMinor is the minor of a CRD without SchemaKubernetesMinorAnnotation: the
// releases before the annotation served only Kubernetes 1.37.
const unannotatedMinor = "1.37"

// installedSchema is the release that wrote the CRD, from its annotations. Without the minor
// annotation it was unannotatedMinor's; an unreadable minor counts as older than every minor.
func installedSchema(annotations map[string]string) schemaRelease {
	minor := version.MustParseGeneric(unannotatedMinor)
	if value, ok := annotations[SchemaKubernetesMinorAnnotation]; ok {
		if parsed, err := version.ParseGeneric(value); err == nil {
			minor = parsed
		} else {
			minor = version.MustParseGeneric("0.0")
		}
	}
	return schemaRelease{minor: minor, version: installedSchemaVersion(annotations)}
}

func installedSchemaVersion(annotations map[string]string) int {
	value, ok := annotations[SchemaVersionAnnotation]
	if !ok {
		return 0
	}
	v, err := strconv.Atoi(value)
	if err != nil {
		return -1
	}
	return v
}

// isEstablished reports whether the CRD's Established condition is True: the API server
// serves its resource.
func isEstablished(crd *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		condition, ok := c.(map[string]any)
		if ok && condition["type"] == string(apiextensionsv1.Established) {
			return condition["status"] == string(apiextensionsv1.ConditionTrue)
		}
	}
	return false
}

func toUnstructured(crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: obj}, nil
}
