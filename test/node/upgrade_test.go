package node_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-k8s/portcullis/test/docs"
	"github.com/portcullis-k8s/portcullis/test/node"
)

// TestKubeadmNodeUpgrade installs stock Kubernetes of the oldest supported minor with kubeadm,
// with kubeadm's DNS addon (kubeadm's upgrade checks read CoreDNS), swaps to that minor's
// Portcullis release as "2a. A kubeadm node" says (its binary and kit), then upgrades one
// minor at a time to the newest as "5. Upgrading" says for a node on cgroup v1, each block as
// written: the new release's kubeadm, binary, kit and images installed (step 1), step 2's
// tag and preflight, step 3's plan and apply in the same shell, upgrade node, and the
// kubelet as for stock. After each minor the control plane, etcd, CoreDNS and the kubelet run
// it, the API server is the new release's, the ClusterConfiguration keeps our plugins, and the
// PodPreset made on the oldest minor reaches the Deployment's next pods. Then the same steps
// upgrade the newest minor's release to its next Portcullis release on the same Kubernetes
// release (`1.37.x → 1.37.y (or .N → .N+1)`), and "4. Rolling back", as written, puts stock of
// the newest minor back.
func TestKubeadmNodeUpgrade(t *testing.T) {
	releases := node.Releases(t)
	if len(releases) < 2 {
		t.Fatalf("one supported minor (%s): no upgrade to prove", releases[0].Minor)
	}
	next := node.NextRelease(t)
	checkCgroupV1(t)
	n, s := installAndSwap(t, releases[0], true)
	n.Run(t, podPreset)
	for _, rel := range releases[1:] {
		upgrade(t, n, s, rel, releases)
	}
	upgrade(t, n, s, next, releases)
	// "4. Rolling back" after the upgrades: stock of the version the cluster runs now, not
	// the backup of 2a, step 1, which names the oldest minor's.
	rollBack(t, n, s)
}

// upgrade upgrades the node to release next (of the next minor, or the next release of the
// same Kubernetes release) as "5. Upgrading" says, then checks what runs.
func upgrade(t *testing.T, n *node.Node, s swapped, next node.Release, all []node.Release) {
	t.Helper()
	t.Logf("upgrading from %s to %s", n.Release.Version, next.Version)
	// Within one Kubernetes release kubeadm "upgrades" to the version the cluster runs: only
	// kube-apiserver's manifest changes, and the kubelet has nothing to upgrade.
	samePatch := next.KubernetesVersion == n.Release.KubernetesVersion
	// 1. The new release's image, as a pull from the patch's registry would leave it; the new
	// kubeadm's images; its kubeadm, binary and kit installed.
	n.Upgrade(t, next)
	patchImage := docs.PatchImage(t, next.KitFile(docs.StaticPodPatch))
	n.ImportOurs(t, patchImage)

	// 2. and 3., in one shell (step 3 runs where step 2 set NEW); kubeadm upgrade apply's
	// question is answered yes.
	script := setNew(t, docs.Block(t, docs.Operating, docs.KeyUpgradePatch), next, all) +
		docs.Block(t, docs.Operating, docs.KeyUpgradeApplyCgroupV1)
	opts := n.Options()
	opts.Stdin = "y\n"
	out, _ := docs.Run(t, script, opts)
	// kubeadm prints SUCCESS also when it changed nothing; the component's line says it
	// replaced kube-apiserver.
	wants := []string{"No problems found", `[upgrade/staticpods] Component "kube-apiserver" upgraded successfully!`,
		fmt.Sprintf("[upgrade] SUCCESS! A control plane node of your cluster was upgraded to %q.", next.KubernetesVersion)}
	if samePatch {
		// What the guide says of this upgrade: the other components' manifests are equal.
		wants = append(wants, "Current and new manifests of kube-controller-manager are equal, skipping upgrade",
			"Current and new manifests of kube-scheduler are equal, skipping upgrade")
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("steps 2 and 3 to %s printed no %q:\n%s", next.Version, want, out)
		}
	}
	// The guide says plan finds nothing newer here, and shows no apply command.
	const applyHint = "You can now apply the upgrade"
	if printed := strings.Contains(out, applyHint); printed == samePatch {
		t.Errorf("steps 2 and 3 to %s: kubeadm upgrade plan printed %q: %t, want %t:\n%s", next.Version, applyHint, printed, !samePatch, out)
	}
	if got := manifestImage(t, n); got != patchImage {
		t.Fatalf("after kubeadm upgrade apply the manifest runs %s, want %s", got, patchImage)
	}
	// upgrade node, as on each other control-plane node. Here the node is upgraded already:
	// kubeadm renders kube-apiserver again, with the patch, and must find the manifest it
	// runs (without the patch it would render stock's image, and replace it).
	out, _ = n.RunBlock(t, docs.Operating, docs.KeyUpgradeNodeCgroupV1)
	for _, want := range []string{"Current and new manifests of kube-apiserver are equal, skipping upgrade", "The control plane instance for this node was successfully upgraded!"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubeadm upgrade node printed no %q:\n%s", want, out)
		}
	}
	if samePatch {
		// The guide's check of what such an upgrade does not renew: the controller manager's
		// and scheduler's kubeconfigs, listed with the others.
		out, _ = n.RunBlock(t, docs.Operating, docs.KeyUpgradeCertsCheck)
		for _, want := range []string{"controller-manager.conf", "scheduler.conf", "apiserver "} {
			if !strings.Contains(out, want) {
				t.Errorf("kubeadm certs check-expiration lists no %q:\n%s", want, out)
			}
		}
	} else {
		n.UpgradeKubelet(t, next)
	}

	waitForAPIServer(t, n, patchImage, next.Version)
	checkUpgraded(t, n, s, next)
	// Our objects are served and enforced: the PodPreset reaches the Deployment's next pods.
	n.Run(t, "kubectl rollout restart deployment/web && kubectl rollout status deployment/web --timeout=3m")
	waitForPods(t, n, "default", "app=web", func(p corev1.Pod) error {
		if !slices.ContainsFunc(p.Spec.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == "PRESET" }) {
			return fmt.Errorf("pod %s has no PRESET from the PodPreset", p.Name)
		}
		return nil
	})
}

// checkUpgraded checks that the node runs release next: the kubelet of its Kubernetes version,
// Ready; the mirror pods of the other control-plane components and etcd, Running, and CoreDNS's
// Deployment, on the images next's kubeadm names; the ClusterConfiguration at its version;
// the kube-apiserver manifest with our plugins and the kit's admission configuration.
func checkUpgraded(t *testing.T, n *node.Node, s swapped, next node.Release) {
	t.Helper()
	images := node.KubeadmImages(t, next)
	client := n.Client(t)
	n.WaitFor(t, "the kubelet "+next.KubernetesVersion+" Ready", 3*time.Minute, func() error {
		no, err := client.CoreV1().Nodes().Get(node.Context(t), node.Hostname, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := no.Status.NodeInfo.KubeletVersion; got != next.KubernetesVersion {
			return fmt.Errorf("the node's kubelet is %s", got)
		}
		if !slices.ContainsFunc(no.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}) {
			return fmt.Errorf("the node is not Ready")
		}
		return nil
	})
	n.WaitFor(t, "the control plane on "+next.KubernetesVersion, 5*time.Minute, func() error {
		for _, component := range []string{"kube-controller-manager", "kube-scheduler", "etcd"} {
			pod, err := client.CoreV1().Pods("kube-system").Get(node.Context(t), component+"-"+node.Hostname, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := pod.Spec.Containers[0].Image; got != images[component] {
				return fmt.Errorf("%s runs %s, want %s", component, got, images[component])
			}
			if pod.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("%s is %s", component, pod.Status.Phase)
			}
		}
		return nil
	})
	coreDNS, err := client.AppsV1().Deployments("kube-system").Get(node.Context(t), "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := coreDNS.Spec.Template.Spec.Containers[0].Image; got != images["coredns"] {
		t.Errorf("CoreDNS runs %s after the upgrade, want %s", got, images["coredns"])
	}
	uploaded := clusterConfiguration(t, n)
	if !strings.Contains(uploaded, "\nkubernetesVersion: "+next.KubernetesVersion+"\n") {
		t.Errorf("after the upgrade the ClusterConfiguration is not at %s:\n%s", next.KubernetesVersion, uploaded)
	}
	// The manifest kubeadm rendered from it runs our plugins with the kit's admission
	// configuration.
	flags := apiServerFlags(t, filepath.Join(n.Dir, "etc-kubernetes", "manifests", "kube-apiserver.yaml"))
	for _, name := range docs.FragmentPlugins(t, s.fragment) {
		if !slices.Contains(strings.Split(flags["enable-admission-plugins"], ","), name) {
			t.Errorf("after the upgrade --enable-admission-plugins=%s lacks %s", flags["enable-admission-plugins"], name)
		}
	}
	if got := flags["admission-control-config-file"]; got != "/etc/kubernetes/portcullis/admission-config.yaml" {
		t.Errorf("after the upgrade --admission-control-config-file=%q", got)
	}
}

// checkCgroupV1 fails unless the machine is on cgroup v1, where the guide's cgroup v1 blocks
// are the ones to run (on cgroup v2 its plain blocks are, and test/docs accounts them as not
// runnable here).
func checkCgroupV1(t *testing.T) {
	t.Helper()
	var fs syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &fs); err != nil {
		t.Fatal(err)
	}
	const cgroup2Magic = 0x63677270 // CGROUP2_SUPER_MAGIC
	if fs.Type == cgroup2Magic {
		t.Fatal("this machine is on cgroup v2: the guide's plain step 3 blocks are the ones to run here (test/docs accounts them as needing cgroup v2)")
	}
}

// newLine is step 2's setting of NEW, "the release you upgrade to".
var newLine = regexp.MustCompile(`(?m)^NEW=(\S+)$`)

// setNew sets step 2's NEW to release next: the block names the newest minor's release, which
// every other release replaces, as the guide says for a minor upgrade ("steps 1–3 above with
// that release's ...") and as an operator does for the next release of the same patch.
func setNew(t *testing.T, block string, next node.Release, all []node.Release) string {
	t.Helper()
	m := newLine.FindAllStringSubmatch(block, -1)
	if len(m) != 1 {
		t.Fatalf("step 2 sets NEW %d times, want once:\n%s", len(m), block)
	}
	if newest := all[len(all)-1]; m[0][1] != newest.Version {
		t.Fatalf("step 2 sets NEW=%s, want the newest release, %s", m[0][1], newest.Version)
	}
	return newLine.ReplaceAllLiteralString(block, "NEW="+next.Version)
}
