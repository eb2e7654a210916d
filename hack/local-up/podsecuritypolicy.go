package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	pspexamples "github.com/portcullis-k8s/portcullis/build/deploy/podsecuritypolicy"
)

// exampleResources are the resources of the kinds the example files hold.
var exampleResources = map[schema.GroupVersionKind]schema.GroupVersionResource{
	{Group: "policy", Version: "v1beta1", Kind: "PodSecurityPolicy"}:                {Group: "policy", Version: "v1beta1", Resource: "podsecuritypolicies"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}: {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}:        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

// createPodSecurityPolicyExamples creates the example policies and grants of
// build/deploy/podsecuritypolicy that do not exist yet, so that with PodSecurityPolicy
// enabled the control plane's pods and a newcomer's first pod are admitted. Objects that
// exist are the operator's, and are left as they are. It returns how many it created.
func createPodSecurityPolicyExamples(ctx context.Context, client dynamic.Interface) (int, error) {
	docs, err := pspexamples.Documents()
	if err != nil {
		return 0, err
	}
	created := 0
	for _, doc := range docs {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return created, fmt.Errorf("example PodSecurityPolicy files: %w", err)
		}
		resource, ok := exampleResources[obj.GroupVersionKind()]
		if !ok {
			return created, fmt.Errorf("example PodSecurityPolicy files: no resource for %s", obj.GroupVersionKind())
		}
		_, err := client.Resource(resource).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{FieldManager: "make-run"})
		switch {
		case err == nil:
			created++
		case !apierrors.IsAlreadyExists(err):
			return created, fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return created, nil
}
