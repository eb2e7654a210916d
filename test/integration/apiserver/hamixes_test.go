package apiserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initializers"
	"github.com/portcullis-k8s/portcullis/test/docs"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// oursAPIServices are the APIServices of the versions of ours the HA members serve, and the
// resource each serves.
var oursAPIServices = framework.OursAPIServices()

// haPolicy admits every pod but a privileged one.
const haPolicy = `apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata:
  name: ha-unprivileged
spec:
  privileged: false
  seLinux: {rule: RunAsAny}
  runAsUser: {rule: RunAsAny}
  supplementalGroups: {rule: RunAsAny}
  fsGroup: {rule: RunAsAny}
  volumes: ['*']
`

// haMember is one API server of the control plane.
type haMember struct {
	name   string
	server *framework.APIServer
	ours   bool
}

// TestHAMixes runs a control plane of three API servers on one etcd through a rolling
// rollback: two of ours and one stock, then one of ours and two stock, then all stock.
// Upstream's aggregator deletes, at each stock start, the APIServices of the versions only
// ours serve; ours recreates them, so that at every step every discovery path of a member of
// ours lists our resources, and the last stock start leaves no APIService pointing at
// nothing. At each step each member is asked, with aggregated and with legacy discovery,
// what it serves, PodSecurityPolicy and Initializers admission are checked on it, and the
// namespace controller (kube-controller-manager, on a stock member throughout) deletes a
// namespace.
func TestHAMixes(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	files := framework.WritePKI(t, t.TempDir())
	oursFlags := []string{"--etcd-prefix=/ha-mixes", "--allow-privileged=true", "--enable-admission-plugins=NodeRestriction,PodSecurityPolicy,Initializers"}
	stockFlags := withoutOurPluginNames(oursFlags)
	ctx := context.Background()

	a := haMember{"ours-a", framework.StartAPIServerWithPKI(t, bins.APIServer, etcd, files, oursFlags...), true}
	dyn := dynamic.NewForConfigOrDie(a.server.Config)
	services := dyn.Resource(framework.APIServiceResource)
	// What upstream's aggregator registers, told apart from what ours recreates: each
	// APIService given wrong priorities before the second server of ours starts, whose
	// aggregator corrects it (it updates, once, an APIService of its own present at its start;
	// the keeper leaves one that exists alone).
	for name := range oursAPIServices {
		svc, err := services.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ours did not register %s: %v", name, err)
		}
		if err := unstructured.SetNestedField(svc.Object, int64(1), "spec", "groupPriorityMinimum"); err != nil {
			t.Fatal(err)
		}
		if _, err := services.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b := haMember{"ours-b", framework.StartAPIServerWithPKI(t, bins.APIServer, etcd, files, oursFlags...), true}
	registered := map[string]*unstructured.Unstructured{}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for name := range oursAPIServices {
			svc, err := services.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if priority, _, _ := unstructured.NestedInt64(svc.Object, "spec", "groupPriorityMinimum"); priority == 1 {
				return false, nil
			}
			registered[name] = svc
		}
		return true, nil
	}); err != nil {
		t.Fatalf("upstream's aggregator in the second server of ours did not correct the APIServices: %v", err)
	}
	for _, doc := range []string{haPolicy, exampleInitializerConfiguration} {
		obj := fromYAML(t, doc)
		gvr := pspResource
		if obj.GetKind() == "InitializerConfiguration" {
			gvr = initializerConfigurationResource
		}
		if _, err := dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := namespace(t, a.server.Client)

	// startStock starts a stock member, watching the APIServices of ours through a running
	// member from before it starts: its start deletes them; with a member of ours still
	// running they come back.
	startStock := func(t *testing.T, name string, through haMember) haMember {
		t.Helper()
		waitForStockStart := framework.WatchAPIServicesThroughStockStart(t, through.server.Config, through.ours)
		m := haMember{name, framework.StartAPIServerWithPKI(t, bins.StockAPIServer, etcd, files, stockFlags...), false}
		waitForStockStart(m.name)
		return m
	}

	c := startStock(t, "stock-c", a)
	framework.StartControllerManager(t, bins.ControllerManager, c.server)
	t.Run("the APIServices ours recreates are those upstream's aggregator registered", func(t *testing.T) {
		for name, want := range registered {
			got, err := services.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Object["spec"], want.Object["spec"]) || !reflect.DeepEqual(got.GetLabels(), want.GetLabels()) {
				t.Errorf("%s: recreated with spec %v, labels %v; upstream's aggregator registered spec %v, labels %v",
					name, got.Object["spec"], got.GetLabels(), want.Object["spec"], want.GetLabels())
			}
		}
	})
	t.Run("two of ours, one stock", func(t *testing.T) {
		checkMix(t, c, ns, []haMember{a, b, c}, true)
	})
	t.Run("preflight --rollback through ours notes the APIServices", func(t *testing.T) {
		out, code := run(t, bins.APIServer, "preflight", "--rollback", "--kubeconfig", adminKubeconfig(t, a))
		if code != 0 || !strings.Contains(out, "APIService v1beta1.policy is served by the API server that answered, a Portcullis one") {
			t.Errorf("exit %d (want 0), output:\n%s", code, out)
		}
	})

	b.server.Stop(t)
	d := startStock(t, "stock-d", a)
	t.Run("one of ours, two stock", func(t *testing.T) {
		checkMix(t, c, ns, []haMember{a, c, d}, true)
	})

	a.server.Stop(t)
	e := startStock(t, "stock-e", c)
	t.Run("all stock: no APIService of ours is left", func(t *testing.T) {
		checkMix(t, c, ns, []haMember{c, d, e}, false)
		for name := range oursAPIServices {
			if _, err := c.server.Client.Discovery().RESTClient().Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/" + name).DoRaw(ctx); !apierrors.IsNotFound(err) {
				t.Errorf("APIService %s, with every member stock: want 404, got %v", name, err)
			}
		}
	})
	t.Run("a server of ours added and removed after the last stock start (a surge rollout's end): preflight --rollback finds the APIServices it left", func(t *testing.T) {
		// The directory the guide runs in: ./kube-apiserver, and the node's admin.conf.
		dir, etc := t.TempDir(), t.TempDir()
		if err := os.Symlink(bins.APIServer, filepath.Join(dir, "kube-apiserver")); err != nil {
			t.Fatal(err)
		}
		copyFile(t, adminKubeconfig(t, c), filepath.Join(etc, "admin.conf"))
		opts := docs.Options{Mounts: map[string]string{"/etc/kubernetes": etc}, Path: []string{bins.Dir}, Dir: dir}
		check := docs.Block(t, docs.Operating, docs.KeyHAAPIServicesCheck)
		docs.Run(t, check, opts)

		f := framework.StartAPIServerWithPKI(t, bins.APIServer, etcd, files, oursFlags...)
		stockServices := dynamic.NewForConfigOrDie(c.server.Config).Resource(framework.APIServiceResource)
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			for name := range oursAPIServices {
				if _, err := stockServices.Get(ctx, name, metav1.GetOptions{}); err != nil {
					return false, nil
				}
			}
			return true, nil
		}); err != nil {
			t.Fatalf("a server of ours started after stock's did not register the APIServices: %v", err)
		}
		f.Stop(t)

		_, _, err := discovery.NewDiscoveryClientForConfigOrDie(c.server.Config).WithLegacy().ServerGroupsAndResources()
		var failed *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &failed) {
			t.Errorf("legacy discovery with the APIServices left: want the versions of ours failed, got %v", err)
		}
		// kube-controller-manager of this release discovers with aggregated discovery, which
		// leaves local APIServices out: the namespace controller is not stopped.
		deleteNamespace(t, c)

		out, _, err := docs.Exec(t, check, opts)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "APIService v1beta1.policy points at nothing") || !strings.Contains(out, "APIService v1alpha1.admissionregistration.k8s.io points at nothing") {
			t.Errorf("preflight --rollback with the APIServices left: %v (want exit 1 naming both), output:\n%s", err, out)
		}
		docs.Run(t, docs.Block(t, docs.Operating, docs.KeyHAAPIServicesDelete), opts)
		docs.Run(t, check, opts)
		if _, _, err := discovery.NewDiscoveryClientForConfigOrDie(c.server.Config).WithLegacy().ServerGroupsAndResources(); err != nil {
			t.Errorf("legacy discovery once they are deleted: %v", err)
		}
	})
}

// checkMix asks each member what it serves and admits, then deletes a namespace through the
// kube-controller-manager that runs against manager. apiServicesPresent says whether the
// APIServices of ours exist (a member of ours runs).
func checkMix(t *testing.T, manager haMember, ns string, members []haMember, apiServicesPresent bool) {
	ctx := context.Background()
	for _, m := range members {
		t.Run(m.name, func(t *testing.T) {
			t.Run("discovery", func(t *testing.T) {
				if m.ours {
					// Every discovery path of ours lists our resources.
					framework.CheckOursDiscoverable(t, m.server.Config, false)
					return
				}
				for _, legacy := range []bool{false, true} {
					served, err := framework.ServedResources(m.server.Config, legacy)
					var failed *discovery.ErrGroupDiscoveryFailed
					switch {
					case legacy && apiServicesPresent:
						// Stock lists the APIServices' versions in /apis and answers 404 for
						// each: what a client balanced onto it sees during the mix.
						if !errors.As(err, &failed) {
							t.Fatalf("legacy discovery through stock during a mix: want the versions of ours failed, got %v", err)
						}
						for name, gvr := range oursAPIServices {
							if gvErr, ok := failed.Groups[gvr.GroupVersion()]; !ok || !apierrors.IsNotFound(gvErr) {
								t.Errorf("legacy discovery through stock, %s: want 404, got %v", name, gvErr)
							}
						}
						if want := "unable to retrieve the complete list of server APIs: admissionregistration.k8s.io/v1alpha1: the server could not find the requested resource, policy/v1beta1: the server could not find the requested resource"; !strings.Contains(err.Error(), want) {
							t.Errorf("legacy discovery through stock says %q, not what docs/operating.md quotes (%q)", err, want)
						}
						if len(failed.Groups) != len(oursAPIServices) {
							t.Errorf("legacy discovery through stock failed for %v, not only the versions of ours", failed.Groups)
						}
					default:
						// Aggregated discovery lists a server's own versions only; with no
						// APIService of ours left, legacy discovery is whole again.
						if err != nil {
							t.Errorf("discovery through stock (legacy: %v): %v", legacy, err)
						}
						for _, gvr := range oursAPIServices {
							if served[gvr] {
								t.Errorf("discovery through stock (legacy: %v) lists %v", legacy, gvr)
							}
						}
					}
				}
			})
			t.Run("PodSecurityPolicy and Initializers admission", func(t *testing.T) {
				pods := m.server.Client.CoreV1().Pods(ns)
				dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
				_, err := pods.Create(ctx, podWith(func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = privilegedContext() }), dryRun)
				switch {
				case m.ours && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "Privileged containers are not allowed")):
					t.Errorf("a privileged pod through ours: want PodSecurityPolicy's refusal, got %v", err)
				case !m.ours && err != nil:
					t.Errorf("a privileged pod through stock: %v", err)
				}
				var pending string
				// The plugin reads the configurations from an informer: a member that has just
				// started may not have them yet.
				err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
					pod, err := pods.Create(ctx, podWith(nil), dryRun)
					if err != nil {
						return false, err
					}
					pending = pod.Annotations[initializers.PendingAnnotation]
					return !m.ours || pending == "podimage.example.com", nil
				})
				if err != nil {
					t.Errorf("a pod through ours: pending initializers %q (%v), want podimage.example.com", pending, err)
				}
				if !m.ours && pending != "" {
					t.Errorf("a pod through stock has pending initializers %q", pending)
				}
			})
		})
	}
	t.Run("the namespace controller deletes a namespace", func(t *testing.T) {
		deleteNamespace(t, manager)
	})
}

// deleteNamespace deletes a namespace holding a ConfigMap through m and waits for the
// namespace controller (kube-controller-manager, run against m) to finish it.
func deleteNamespace(t *testing.T, m haMember) {
	t.Helper()
	ctx := context.Background()
	{
		client := m.server.Client
		doomed := namespace(t, client)
		if _, err := client.CoreV1().ConfigMaps(doomed).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := client.CoreV1().Namespaces().Delete(ctx, doomed, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			got, _ := client.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
			t.Errorf("namespace %s not deleted: %v; status %+v", doomed, err, got.Status)
		}
	}
}

// adminKubeconfig writes a kubeconfig reaching m as an administrator.
func adminKubeconfig(t *testing.T, m haMember) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admin.conf")
	if err := controlplane.WriteKubeconfig(path, controlplane.URL(m.server.Port), m.server.PKI.CA, m.server.PKI.Admin); err != nil {
		t.Fatal(err)
	}
	return path
}
