package podpreset

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
)

var crdResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// installCRD creates the PodPreset CRD, or updates it when its schema hash differs, retrying
// until it succeeds or ctx ends: the plugin is built before the server serves, so the first
// attempts fail. It never deletes the CRD, so disabling the plugin keeps every preset.
func installCRD(ctx context.Context, client dynamic.Interface) {
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := ensureCRD(ctx, client); err != nil {
			klog.V(2).InfoS("Installing the PodPreset CRD; will retry", "err", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		klog.ErrorS(err, "Installing the PodPreset CRD failed")
	}
}

// ensureCRD makes the cluster's PodPreset CRD the one CRD() describes.
func ensureCRD(ctx context.Context, client dynamic.Interface) error {
	desired, err := CRD()
	if err != nil {
		return err
	}
	crds := client.Resource(crdResource)
	existing, err := crds.Get(ctx, CRDName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj, err := toUnstructured(desired)
		if err != nil {
			return err
		}
		_, err = crds.Create(ctx, obj, metav1.CreateOptions{FieldManager: "kube-apiserver-podpreset"})
		if err == nil {
			klog.InfoS("Installed the PodPreset CRD", "crd", CRDName)
		}
		return err
	}
	if err != nil {
		return err
	}
	if existing.GetAnnotations()[SchemaHashAnnotation] == desired.Annotations[SchemaHashAnnotation] {
		return nil
	}
	// Our schema changed: replace spec, labels and annotations, keep everything else.
	obj, err := toUnstructured(desired)
	if err != nil {
		return err
	}
	obj.SetResourceVersion(existing.GetResourceVersion())
	obj.SetUID(existing.GetUID())
	if _, err := crds.Update(ctx, obj, metav1.UpdateOptions{FieldManager: "kube-apiserver-podpreset"}); err != nil {
		return fmt.Errorf("updating the PodPreset CRD: %w", err)
	}
	klog.InfoS("Updated the PodPreset CRD to the current schema", "crd", CRDName)
	return nil
}

func toUnstructured(crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: obj}, nil
}
