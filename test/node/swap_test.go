package node_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-k8s/portcullis/test/docs"
	"github.com/portcullis-k8s/portcullis/test/node"
)

// TestKubeadmNode installs stock Kubernetes on a real node with kubeadm, then follows
// docs/operating.md on it, each block as written: the README's preflight of the running
// manifest, "2a. A kubeadm node" (back up, install the kit, merge the ClusterConfiguration,
// render and preflight, upload, put the manifest in place, check), our plugins on pods the
// controllers create, and "4. Rolling back" to stock. After each step the kubelet runs the
// manifest kubeadm rendered, and the API server it runs is the one the step names.
func TestKubeadmNode(t *testing.T) {
	n, s := installAndSwap(t, node.Newest(t), false)

	// Our plugins on real pods: a PodPreset reaches the Deployment's next pods, which the
	// ReplicaSet controller creates (its service account's rights, not an admin's), and
	// they run.
	n.Run(t, podPreset)
	n.Run(t, "kubectl rollout restart deployment/web && kubectl rollout status deployment/web --timeout=3m")
	waitForPods(t, n, "default", "app=web", func(p corev1.Pod) error {
		if !slices.ContainsFunc(p.Spec.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == "PRESET" }) {
			return fmt.Errorf("pod %s has no PRESET from the PodPreset", p.Name)
		}
		if p.Annotations["podpreset.admission.kubernetes.io/podpreset-web"] == "" {
			return fmt.Errorf("pod %s has no podpreset annotation: %v", p.Name, p.Annotations)
		}
		return nil
	})
	// SecurityContextDeny runs in Warn with the kit's configuration: the pod it would refuse
	// is admitted, with a warning.
	_, stderr := n.Run(t, runAsUserPod(n.PauseImage))
	if !strings.Contains(stderr, "SecurityContextDeny") {
		t.Errorf("creating a pod with runAsUser gave no SecurityContextDeny warning:\n%s", stderr)
	}

	rollBack(t, n, s)
}

// rollBack follows "4. Rolling back" on a node swapped to ours, as written: our patch out, our
// names out of the ClusterConfiguration (the edit), step 5's first block without its last
// command, then the check and install of the render. The kubelet runs stock of the cluster's
// version again, the check reports it, the ClusterConfiguration no longer names our plugins,
// and the web Deployment's next pods get no PodPreset.
func rollBack(t *testing.T, n *node.Node, s swapped) {
	t.Helper()
	kubernetesVersion := n.Release.KubernetesVersion
	stockImage := "registry.k8s.io/kube-apiserver:" + kubernetesVersion
	n.RunBlock(t, docs.Operating, docs.KeyRollbackKubeadm)
	node.WriteFile(t, s.clusterFile, string(docs.RemovePlugins(t, docs.ReadFile(t, s.clusterFile), docs.FragmentPlugins(t, s.fragment))))
	n.Run(t, docs.RenderWithoutPreflight(t))
	out, _ := n.RunBlock(t, docs.Operating, docs.KeyRollbackRender)
	if !strings.Contains(out, "image: "+stockImage) {
		t.Errorf("the rollback's render does not run %s:\n%s", stockImage, out)
	}
	waitForAPIServer(t, n, stockImage, kubernetesVersion)
	if uploaded := clusterConfiguration(t, n); strings.Contains(uploaded, "SecurityContextDeny") {
		t.Errorf("after the rollback the ClusterConfiguration still enables our plugins:\n%s", uploaded)
	}
	out, _ = n.Run(t, docs.Block(t, docs.Operating, docs.KeyKubeadmCheck))
	if !strings.Contains(out, "Server Version: "+kubernetesVersion+"\n") {
		t.Errorf("after the rollback the check printed:\n%s", out)
	}
	// Stock applies no PodPreset: the Deployment's next pods run without it.
	n.Run(t, "kubectl rollout restart deployment/web && kubectl rollout status deployment/web --timeout=3m")
	waitForPods(t, n, "default", "app=web", func(p corev1.Pod) error {
		if slices.ContainsFunc(p.Spec.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == "PRESET" }) {
			return fmt.Errorf("pod %s got the PodPreset from stock", p.Name)
		}
		return nil
	})
}

// installAndSwap installs stock Kubernetes of release rel on a new node with kubeadm's CLI
// (kubeadmInit, with kubeadm's DNS addon only with coreDNS), runs an ordinary workload on it
// before the swap - the Deployment web, whose pods the ReplicaSet controller creates - and
// swaps to ours (swapToOurs). apiServerArgs (name=value) are the cluster's own API server
// flags, which the swap keeps.
func installAndSwap(t *testing.T, rel node.Release, coreDNS bool, apiServerArgs ...string) (*node.Node, swapped) {
	t.Helper()
	n := node.Start(t, rel, coreDNS)
	kubeadmInit(t, n, coreDNS, apiServerArgs...)
	waitForAPIServer(t, n, "registry.k8s.io/kube-apiserver:"+rel.KubernetesVersion, rel.KubernetesVersion)
	n.Run(t, workload("web", n.PauseImage, false))
	waitForPods(t, n, "default", "app=web", func(corev1.Pod) error { return nil })
	return n, swapToOurs(t, n)
}

// swapped is a node after docs/operating.md's "2a. A kubeadm node": our kube-apiserver runs
// from the manifest kubeadm rendered with the kit.
type swapped struct {
	ours, patchImage string
	// clusterFile is the guide's /root/kubeadm-cluster.yaml (the merged ClusterConfiguration,
	// uploaded), as the host sees it; fragment the kit's kubeadm-config.yaml.
	clusterFile string
	fragment    []byte
}

// swapToOurs follows "2a. A kubeadm node" on a node kubeadm installed stock on, each block as
// written, with the node's release (its binary and kit), checking what each step leaves: the
// README's preflight of the running manifest, the backup, our image, the kit installed, the
// merged ClusterConfiguration rendered, preflighted, uploaded and in place, and the check.
func swapToOurs(t *testing.T, n *node.Node) swapped {
	t.Helper()
	rel := n.Release
	ours := rel.Version
	etc, root := filepath.Join(n.Dir, "etc-kubernetes"), filepath.Join(n.Dir, "root")
	running := filepath.Join(etc, "manifests", "kube-apiserver.yaml")

	// The README's preflight of the node as it runs.
	out, _ := n.RunBlock(t, "README.md", docs.KeyReadmePreflight)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the running manifest:\n%s", out)
	}

	// 1. Back up the manifest.
	stock := docs.ReadFile(t, running)
	n.RunBlock(t, docs.Operating, docs.KeyKubeadmBackup)
	if !bytes.Equal(docs.ReadFile(t, filepath.Join(root, "kube-apiserver.yaml.stock")), stock) {
		t.Errorf("/root/kube-apiserver.yaml.stock is not the running manifest")
	}

	// 2. The release's image, in the registry the patch names: here imported under that
	// name, as a pull from it would leave it.
	patchImage := docs.PatchImage(t, rel.KitFile(docs.StaticPodPatch))
	n.ImportOurs(t, patchImage)

	// 3. Install the patch and the admission configuration.
	n.RunBlock(t, docs.Operating, docs.KeyKubeadmInstall)
	for installed, shipped := range map[string]string{"patches/kube-apiserver.yaml": docs.StaticPodPatch, "portcullis/admission-config.yaml": docs.AdmissionConfig} {
		if !bytes.Equal(docs.ReadFile(t, filepath.Join(etc, installed)), docs.ReadFile(t, rel.KitFile(shipped))) {
			t.Errorf("/etc/kubernetes/%s is not %s", installed, shipped)
		}
	}

	// 4. Read the ClusterConfiguration, then merge kubeadm-config.yaml into it (the edit).
	n.RunBlock(t, docs.Operating, docs.KeyKubeadmGetConfig)
	clusterFile := filepath.Join(root, "kubeadm-cluster.yaml")
	fragment := docs.ReadFile(t, rel.KitFile(docs.KubeadmFragment))
	node.WriteFile(t, clusterFile, string(docs.MergeClusterConfiguration(t, docs.ReadFile(t, clusterFile), fragment)))

	// 5. Render and preflight against the running manifest.
	out, _ = n.RunBlock(t, docs.Operating, docs.KeyKubeadmRender)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the rendered manifest:\n%s", out)
	}
	rendered := apiServerFlags(t, filepath.Join(root, "portcullis-render", "kube-apiserver.yaml"))
	if got, want := rendered["advertise-address"], apiServerFlags(t, running)["advertise-address"]; got != want || want != node.NodeAddress {
		t.Errorf("the render advertises %q, the running manifest %q, want the node's %s", got, want, node.NodeAddress)
	}
	for _, name := range docs.FragmentPlugins(t, fragment) {
		if !slices.Contains(strings.Split(rendered["enable-admission-plugins"], ","), name) {
			t.Errorf("the render's --enable-admission-plugins=%s lacks %s", rendered["enable-admission-plugins"], name)
		}
	}
	if got := rendered["admission-control-config-file"]; got != "/etc/kubernetes/portcullis/admission-config.yaml" {
		t.Errorf("the render's --admission-control-config-file=%q", got)
	}
	// Upload, and the manifest in place: the kubelet replaces the static pod.
	n.RunBlock(t, docs.Operating, docs.KeyKubeadmUpload)
	if uploaded := clusterConfiguration(t, n); !strings.Contains(uploaded, "SecurityContextDeny") || !strings.Contains(uploaded, "/etc/kubernetes/portcullis") {
		t.Errorf("the uploaded ClusterConfiguration lacks the kit's settings:\n%s", uploaded)
	}
	if !bytes.Equal(docs.ReadFile(t, running), docs.ReadFile(t, filepath.Join(root, "portcullis-render", "kube-apiserver.yaml"))) {
		t.Fatalf("/etc/kubernetes/manifests/kube-apiserver.yaml is not the render")
	}
	if got := manifestImage(t, n); got != patchImage {
		t.Fatalf("after the swap the manifest runs %s, want %s", got, patchImage)
	}
	// "Watch the container come back", then the check.
	waitForAPIServer(t, n, patchImage, ours)
	out, _ = n.RunBlock(t, docs.Operating, docs.KeyKubeadmCheck)
	if !strings.Contains(out, "ok") || !strings.Contains(out, "Server Version: "+ours) {
		t.Errorf("the check printed:\n%s", out)
	}

	// 6. What a new control-plane node would run: kubeadm join's render, on this node, from
	// the uploaded configuration (kubeadm init published the cluster-info it discovers), then
	// preflight (the block runs under errexit).
	joinOpts := n.Options()
	joinOpts.Env = append(slices.Clone(joinOpts.Env), "NODE_NAME=cp-2", "NODE_ADDRESS=192.0.2.11")
	out, _ = docs.Run(t, docs.Block(t, docs.Operating, docs.KeyKubeadmJoinRender), joinOpts)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the joining node's render:\n%s", out)
	}
	joined := apiServerFlags(t, filepath.Join(root, "portcullis-join-render", "kube-apiserver.yaml"))
	if joined["advertise-address"] != "192.0.2.11" || !strings.Contains(joined["enable-admission-plugins"], "SecurityContextDeny") {
		t.Errorf("the joining node's render advertises %q and enables %q", joined["advertise-address"], joined["enable-admission-plugins"])
	}

	return swapped{ours: ours, patchImage: patchImage, clusterFile: clusterFile, fragment: fragment}
}

// workload is a Deployment of one pause container (the one workload image every node has),
// its pods labelled app=name, privileged or not.
func workload(name, pause string, privileged bool) string {
	securityContext := ""
	if privileged {
		securityContext = "\n        securityContext: {privileged: true}"
	}
	return `kubectl apply -f - <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: default
spec:
  replicas: 1
  selector:
    matchLabels: {app: ` + name + `}
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      containers:
      - name: ` + name + `
        image: ` + pause + securityContext + `
EOF
`
}

const podPreset = `kubectl apply -f - <<'EOF'
apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata:
  name: web
  namespace: default
spec:
  selector:
    matchLabels: {app: web}
  env:
  - name: PRESET
    value: "from-the-preset"
EOF
`

func runAsUserPod(pause string) string {
	return `kubectl run run-as-user --image=` + pause + ` --restart=Never --overrides='{"spec":{"securityContext":{"runAsUser":1000}}}'
`
}

// waitForPods waits until every pod of selector in namespace is Running and Ready, none is
// terminating, and each passes check.
func waitForPods(t *testing.T, n *node.Node, namespace, selector string, check func(corev1.Pod) error) {
	t.Helper()
	n.WaitFor(t, "the pods "+selector+" in "+namespace, 3*time.Minute, func() error {
		pods, err := n.Client(t).CoreV1().Pods(namespace).List(node.Context(t), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return fmt.Errorf("no pod")
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				return fmt.Errorf("pod %s is terminating", p.Name)
			}
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("pod %s is %s", p.Name, p.Status.Phase)
			}
			if !slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			}) {
				return fmt.Errorf("pod %s is not Ready", p.Name)
			}
			if err := check(p); err != nil {
				return err
			}
		}
		return nil
	})
}
