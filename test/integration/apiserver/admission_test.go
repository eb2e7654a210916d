package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// TestAdmission runs, against one real etcd, stock kube-apiserver and ours with the same
// flags, and ours with SecurityContextDeny enabled (the flag's names in both orders).
func TestAdmission(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	stock := framework.StartAPIServer(t, bins.StockAPIServer, etcd, "--etcd-prefix=/stock")
	ours := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/ours")
	scd := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/scd",
		"--enable-admission-plugins=SecurityContextDeny,NamespaceExists")
	scdReordered := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/scd-reordered",
		"--enable-admission-plugins=NamespaceExists,SecurityContextDeny")

	t.Run("default chain is stock's", func(t *testing.T) {
		oursChains := ours.Chains(t)
		if diff := cmp.Diff(stock.Chains(t), oursChains); diff != "" {
			t.Errorf("admission chains differ from stock (-stock +ours):\n%s", diff)
		}
		if slices.Contains(oursChains.Validating, "SecurityContextDeny") {
			t.Errorf("SecurityContextDeny runs without being enabled: %v", oursChains.Validating)
		}
	})

	// Our command composes upstream's server construction itself (cmd/kube-apiserver/app/run.go):
	// with nothing of ours enabled, it must add nothing to the server's health checks.
	t.Run("default health and readiness checks are stock's", func(t *testing.T) {
		for _, endpoint := range []string{"/readyz", "/livez", "/healthz"} {
			if diff := cmp.Diff(checkNames(t, stock, endpoint), checkNames(t, ours, endpoint)); diff != "" {
				t.Errorf("%s checks differ from stock (-stock +ours):\n%s", endpoint, diff)
			}
		}
	})

	// The binary knows policy/v1beta1 PodSecurityPolicy; with nothing of ours enabled it must
	// serve exactly what stock serves.
	t.Run("default discovery is stock's", func(t *testing.T) {
		if diff := cmp.Diff(discovered(t, stock), discovered(t, ours)); diff != "" {
			t.Errorf("discovery differs from stock (-stock +ours):\n%s", diff)
		}
		if _, err := ours.Client.Discovery().ServerResourcesForGroupVersion("policy/v1beta1"); !apierrors.IsNotFound(err) {
			t.Errorf("policy/v1beta1 without the plugin: want 404, got %v", err)
		}
		err := ours.Client.Discovery().RESTClient().Get().AbsPath("/apis/admissionregistration.k8s.io/v1alpha1/initializerconfigurations").Do(context.Background()).Error()
		if !apierrors.IsNotFound(err) {
			t.Errorf("initializerconfigurations without the plugin: want 404, got %v", err)
		}
	})

	t.Run("enabling SecurityContextDeny puts it after NamespaceExists", func(t *testing.T) {
		chains := scd.Chains(t)
		at := slices.Index(chains.Validating, "SecurityContextDeny")
		if at < 1 || chains.Validating[at-1] != "NamespaceExists" {
			t.Errorf("validating chain %v: want SecurityContextDeny right after NamespaceExists", chains.Validating)
		}
		if slices.Contains(chains.Mutating, "SecurityContextDeny") {
			t.Errorf("SecurityContextDeny is in the mutating chain: %v", chains.Mutating)
		}
	})

	t.Run("the order of names in the flag does not change the chain", func(t *testing.T) {
		if diff := cmp.Diff(scd.Chains(t), scdReordered.Chains(t)); diff != "" {
			t.Errorf("chains differ:\n%s", diff)
		}
	})

	t.Run("GET /version reports the distribution's version", func(t *testing.T) {
		info, err := ours.Client.Discovery().ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if want := versionFile(t); info.GitVersion != want || info.Major != "1" || !strings.HasPrefix(want, "v1."+info.Minor+".") {
			t.Errorf("GET /version = %+v, want gitVersion %s", info, want)
		}
	})

	t.Run("SecurityContextDeny", func(t *testing.T) {
		ctx := context.Background()
		runAsUser := podWith(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000))}
		})
		secondContainerRunAsUser := podWith(func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "registry.k8s.io/pause:3.10",
				SecurityContext: &corev1.SecurityContext{RunAsUser: ptr(int64(1000))}})
		})
		plain := podWith(nil)

		t.Run("rejects a pod with runAsUser", func(t *testing.T) {
			ns := namespace(t, scd.Client)
			wantForbidden(t, createPod(ctx, scd.Client, ns, runAsUser), "pod.Spec.SecurityContext.RunAsUser is forbidden")
		})
		t.Run("names the container it rejects", func(t *testing.T) {
			ns := namespace(t, scd.Client)
			wantForbidden(t, createPod(ctx, scd.Client, ns, secondContainerRunAsUser), "spec.containers[1].securityContext.runAsUser is forbidden")
		})
		t.Run("admits a pod without forbidden fields", func(t *testing.T) {
			ns := namespace(t, scd.Client)
			if err := createPod(ctx, scd.Client, ns, plain); err != nil {
				t.Fatalf("plain pod rejected: %v", err)
			}
			if _, err := scd.Client.CoreV1().Pods(ns).Get(ctx, plain.Name, metav1.GetOptions{}); err != nil {
				t.Fatalf("plain pod not stored: %v", err)
			}
		})
		t.Run("rejects an ephemeral container with runAsUser", func(t *testing.T) {
			ns := namespace(t, scd.Client)
			if err := createPod(ctx, scd.Client, ns, plain); err != nil {
				t.Fatal(err)
			}
			pod, err := scd.Client.CoreV1().Pods(ns).Get(ctx, plain.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					Name: "debug", Image: "busybox", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					ImagePullPolicy: corev1.PullIfNotPresent,
					SecurityContext: &corev1.SecurityContext{RunAsUser: ptr(int64(0))},
				},
			})
			_, err = scd.Client.CoreV1().Pods(ns).UpdateEphemeralContainers(ctx, pod.Name, pod, metav1.UpdateOptions{})
			wantForbidden(t, err, "spec.ephemeralContainers[0].securityContext.runAsUser is forbidden")
		})
		for name, server := range map[string]*framework.APIServer{"ours": ours, "stock": stock} {
			t.Run("without the flag "+name+" admits the same pod", func(t *testing.T) {
				ns := namespace(t, server.Client)
				if err := createPod(ctx, server.Client, ns, runAsUser); err != nil {
					t.Fatalf("pod with runAsUser rejected: %v", err)
				}
			})
		}
	})
}

func ptr[T any](v T) *T { return &v }

// discovered lists every group version and resource the server serves, with its verbs.
func discovered(t *testing.T, server *framework.APIServer) []string {
	t.Helper()
	_, lists, err := server.Client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, list := range lists {
		for _, r := range list.APIResources {
			out = append(out, fmt.Sprintf("%s %s %v %v", list.GroupVersion, r.Name, r.Verbs, r.ShortNames))
		}
	}
	slices.Sort(out)
	return out
}

// checkNames returns the names of the checks a health endpoint reports with ?verbose.
func checkNames(t *testing.T, server *framework.APIServer, endpoint string) []string {
	t.Helper()
	body, err := server.Client.Discovery().RESTClient().Get().AbsPath(endpoint).Param("verbose", "true").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("%s: %v: %s", endpoint, err, body)
	}
	var names []string
	for _, line := range strings.Split(string(body), "\n") {
		if name, ok := strings.CutPrefix(line, "[+]"); ok {
			names = append(names, strings.Fields(name)[0])
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s?verbose lists no check:\n%s", endpoint, body)
	}
	return names
}

func podWith(mutate func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "a", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if mutate != nil {
		mutate(pod)
	}
	return pod
}

// namespace creates a namespace with its default ServiceAccount, which the ServiceAccount
// admission plugin looks for: most tests run no controller manager to create it (where one
// runs, it may have been first).
func namespace(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return ns.Name
}

func createPod(ctx context.Context, client kubernetes.Interface, ns string, pod *corev1.Pod) error {
	_, err := client.CoreV1().Pods(ns).Create(ctx, pod.DeepCopy(), metav1.CreateOptions{})
	return err
}

func wantForbidden(t *testing.T, err error, message string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want 403 Forbidden, got %v", err)
	}
	if !strings.Contains(err.Error(), message) {
		t.Errorf("403 %q does not say %q", err.Error(), message)
	}
}
