package apiserver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

var initializerConfigurationResource = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Resource: "initializerconfigurations"}

// The example InitializerConfiguration of the Kubernetes 1.13 documentation ("Dynamic
// Admission Control", Initializers), as it stood there.
const exampleInitializerConfiguration = `
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: InitializerConfiguration
metadata:
  name: example-config
initializers:
  # the name needs to be fully qualified, i.e., containing at least two "."
  - name: podimage.example.com
    rules:
      # apiGroups, apiVersion, resources all support wildcard "*".
      # "*" cannot be mixed with non-wildcard.
      - apiGroups:
          - ""
        apiVersions:
          - v1
        resources:
          - pods
`

// TestServedAPIs serves every API of ours in an upstream group by the Portcullis entry's
// servedAPIs alone, without a plugin, so that their objects can be written before
// enforcement is turned on. Each is checked the same way — discovery beside upstream's
// versions of its group, the APIService, OpenAPI v3, create/read/update/delete, stored
// encrypted as JSON — so a Kubernetes bump that changes how upstream builds a group fails
// here for both.
func TestServedAPIs(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	// Encryption at rest names the resources as for any other.
	encryption := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(encryption, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [podsecuritypolicies.policy, initializerconfigurations.admissionregistration.k8s.io]
  providers:
  - aescbc:
      keys:
      - name: key1
        secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
  - identity: {}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	admissionConfig := portcullisConfig(t, "servedAPIs: [policy/v1beta1, admissionregistration.k8s.io/v1alpha1]")
	server := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/served-apis",
		"--admission-control-config-file="+admissionConfig, "--encryption-provider-config="+encryption)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(server.Config)
	etcdClient, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcdClient.Close()

	for _, tc := range []struct {
		resource schema.GroupVersionResource
		kind     string
		// groupVersions are the group's versions in discovery, the preferred first: stock's
		// default, and ours.
		groupVersions []string
		// object is a manifest of the documentation that introduced the API.
		object string
		// change edits the object for the update.
		change func(*unstructured.Unstructured)
		// schemaParts are in the OpenAPI v3 document of the version.
		schemaParts []string
		// invalid is an object the API's validation refuses, naming field.
		invalid func(*unstructured.Unstructured)
		field   string
	}{
		{
			resource:      pspResource,
			kind:          "PodSecurityPolicy",
			groupVersions: []string{"v1", "v1beta1"},
			object:        examplePolicyFile(t, "restricted"),
			change: func(obj *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(obj.Object, true, "spec", "readOnlyRootFilesystem")
			},
			schemaParts: []string{"PodSecurityPolicySpec", "allowPrivilegeEscalation"},
			invalid: func(obj *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(obj.Object, "NotARule", "spec", "seLinux", "rule")
			},
			field: "spec.seLinux.rule",
		},
		{
			resource:      initializerConfigurationResource,
			kind:          "InitializerConfiguration",
			groupVersions: []string{"v1", "v1alpha1"},
			object:        exampleInitializerConfiguration,
			change: func(obj *unstructured.Unstructured) {
				// Each matchPolicy spelt out: left out, it reads back as Equivalent.
				_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"name": "podimage.example.com", "matchPolicy": "Exact"},
					map[string]any{"name": "sidecar.example.com", "matchPolicy": "Equivalent"}}, "initializers")
			},
			schemaParts: []string{`"initializers"`, `"apiVersions"`},
			invalid: func(obj *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"name": "example.com"}}, "initializers")
			},
			field: "initializers[0].name",
		},
	} {
		gv := tc.resource.GroupVersion()
		t.Run(gv.String(), func(t *testing.T) {
			t.Run("discovery lists the resource in its own version, beside stock's versions of the group", func(t *testing.T) {
				groups, err := server.Client.Discovery().ServerGroups()
				if err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == gv.Group })
				if i < 0 {
					t.Fatalf("no group %s", gv.Group)
				}
				var versions []string
				for _, v := range groups.Groups[i].Versions {
					versions = append(versions, v.Version)
				}
				if !slices.Equal(versions, tc.groupVersions) || groups.Groups[i].PreferredVersion.Version != tc.groupVersions[0] {
					t.Errorf("%s versions %v (preferred %s), want %v", gv.Group, versions, groups.Groups[i].PreferredVersion.Version, tc.groupVersions)
				}
				resources, err := server.Client.Discovery().ServerResourcesForGroupVersion(gv.String())
				if err != nil {
					t.Fatal(err)
				}
				// Only ours: upstream's resources of the version (admissionregistration's alpha
				// policies) stay as stock's flags leave them, off.
				if len(resources.APIResources) != 1 || resources.APIResources[0].Name != tc.resource.Resource ||
					resources.APIResources[0].Kind != tc.kind || resources.APIResources[0].Namespaced {
					t.Fatalf("%s serves %+v, want the cluster-scoped %s only", gv, resources.APIResources, tc.resource.Resource)
				}
			})

			t.Run("the APIService is Available", func(t *testing.T) {
				apiservices := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
				name := gv.Version + "." + gv.Group
				err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
					svc, err := apiservices.Get(ctx, name, metav1.GetOptions{})
					return err == nil && conditionTrue(svc, "Available"), nil
				})
				if err != nil {
					t.Fatalf("APIService %s not Available within a minute: %v", name, err)
				}
			})

			t.Run("OpenAPI v3 describes the version for kubectl explain", func(t *testing.T) {
				doc, err := server.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/" + gv.String()).DoRaw(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range append([]string{`"kind":"` + tc.kind + `"`}, tc.schemaParts...) {
					if !strings.Contains(string(doc), want) {
						t.Errorf("the OpenAPI v3 document of %s lacks %s", gv, want)
					}
				}
			})

			t.Run("the documentation's object applies, reads back, updates and deletes; stored encrypted", func(t *testing.T) {
				client := dyn.Resource(tc.resource)
				obj := fromYAML(t, tc.object)
				name := obj.GetName()
				if _, err := client.Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: "kubectl"}); err != nil {
					t.Fatalf("applying %s: %v", name, err)
				}
				got, err := client.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				tc.change(got)
				if _, err := client.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("update: %v", err)
				}
				reread, err := client.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				delete(got.Object, "metadata")
				delete(reread.Object, "metadata")
				if !equality.Semantic.DeepEqual(got.Object, reread.Object) {
					t.Errorf("the update does not read back:\n%s", cmp.Diff(got.Object, reread.Object))
				}
				key := "/served-apis/" + tc.resource.Resource + "/" + name
				stored, err := etcdClient.Get(ctx, key)
				if err != nil || len(stored.Kvs) != 1 {
					t.Fatalf("reading %s in etcd: %v", key, err)
				}
				if value := stored.Kvs[0].Value; !bytes.HasPrefix(value, []byte("k8s:enc:aescbc:v1:key1:")) {
					t.Errorf("stored unencrypted: %.60q", value)
				}
				list, err := client.List(ctx, metav1.ListOptions{})
				if err != nil || len(list.Items) != 1 {
					t.Fatalf("list: %v", err)
				}
				if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := client.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("after delete: %v, want 404", err)
				}
			})

			t.Run("an invalid object is refused naming the field", func(t *testing.T) {
				obj := fromYAML(t, tc.object)
				obj.SetName("invalid")
				tc.invalid(obj)
				_, err := dyn.Resource(tc.resource).Create(ctx, obj, metav1.CreateOptions{})
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
					t.Errorf("want 422 naming %s, got %v", tc.field, err)
				}
			})
		})
	}

	t.Run("without the PodSecurityPolicy plugin, no pod is judged by a policy", func(t *testing.T) {
		if _, err := dyn.Resource(pspResource).Create(ctx, fromYAML(t, examplePolicyFile(t, "restricted")), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ns := namespace(t, server.Client)
		// Root: the restricted policy refuses it (MustRunAsNonRoot); nothing else does.
		pod := podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(0))}
		})
		created, err := server.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("without the plugin nothing is enforced, but a root pod was refused: %v", err)
		}
		if _, ok := created.Annotations["kubernetes.io/psp"]; ok {
			t.Errorf("a pod was judged by a policy without the plugin: %v", created.Annotations)
		}
	})
}
