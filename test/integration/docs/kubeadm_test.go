package docs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-k8s/portcullis/test/docs"
)

// renderedManifest is step 5's render, under /root.
const renderedManifest = "portcullis-render/kube-apiserver.yaml"

// TestOperatingKubeadm follows docs/operating.md's "2a. A kubeadm node" on a node kubeadm
// laid out, with our server standing in for the kubelet's static pod (the real node,
// test/node.TestKubeadmNode, is the proof of record: make test-node), running each block as
// written; it keeps in make test what the real node does not run: a rollback after the
// cluster was upgraded renders stock at the upgraded version. The blocks: the README's
// preflight of the running manifest and the webhooks' check, then steps 1, 3 (install, and
// the patch's check) and 4 (the ConfigMap read; the edit is the operator's, done here in Go
// as the step describes), 5 (render and preflight, upload) and the check after it, of a
// server started, as the kubelet would, from the installed manifest.
func TestOperatingKubeadm(t *testing.T) {
	n := kubeadmNode(t)
	repo := docs.RepoRoot(t)
	running := filepath.Join(n.etc, "manifests", "kube-apiserver.yaml")
	stock := docs.ReadFile(t, running)

	// The README's preflight of the node as it runs.
	out, _ := n.run(t, "README.md", docs.KeyReadmePreflight)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the running manifest:\n%s", out)
	}

	// The webhooks' check before the swap, through the operator's kubeconfig.
	writeFile(t, filepath.Join(n.root, ".kube", "config"), string(docs.ReadFile(t, filepath.Join(n.etc, "admin.conf"))))
	out, _ = n.run(t, docs.Operating, docs.KeyWebhooksPreflight)
	if !strings.Contains(out, "No problems found") || !strings.Contains(out, "webhook") {
		t.Errorf("preflight --webhooks of the running manifest:\n%s", out)
	}

	// 1. Back up the manifest.
	n.run(t, docs.Operating, docs.KeyKubeadmBackup)
	if got := docs.ReadFile(t, filepath.Join(n.root, "kube-apiserver.yaml.stock")); !bytes.Equal(got, stock) {
		t.Errorf("/root/kube-apiserver.yaml.stock is not the running manifest")
	}

	// 3. Install the patch and the admission configuration.
	n.run(t, docs.Operating, docs.KeyKubeadmInstall)
	for installed, shipped := range map[string]string{"patches/kube-apiserver.yaml": docs.StaticPodPatch, "portcullis/admission-config.yaml": docs.AdmissionConfig} {
		if !bytes.Equal(docs.ReadFile(t, filepath.Join(n.etc, installed)), docs.ReadFile(t, filepath.Join(repo, shipped))) {
			t.Errorf("/etc/kubernetes/%s is not %s", installed, shipped)
		}
	}

	// 3. Check the patch with the new binary.
	out, _ = n.run(t, docs.Operating, docs.KeyKubeadmPatchCheck)
	if want := "sets the kube-apiserver image " + docs.PatchImage(t, filepath.Join(repo, docs.StaticPodPatch)); !strings.Contains(out, want) || !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the installed patch does not say %q and find no problem:\n%s", want, out)
	}

	// 4. Read the ClusterConfiguration, then merge kubeadm-config.yaml into it.
	n.run(t, docs.Operating, docs.KeyKubeadmGetConfig)
	clusterFile := filepath.Join(n.root, "kubeadm-cluster.yaml")
	cluster := docs.ReadFile(t, clusterFile)
	if !bytes.Contains(cluster, []byte("kind: ClusterConfiguration")) {
		t.Fatalf("/root/kubeadm-cluster.yaml holds no ClusterConfiguration:\n%s", cluster)
	}
	fragment := docs.ReadFile(t, filepath.Join(repo, docs.KubeadmFragment))
	writeFile(t, clusterFile, string(docs.MergeClusterConfiguration(t, cluster, fragment)))

	// 5. Render this node's manifest and preflight it against the running one (the block
	// runs under errexit: preflight's exit code 0 is required).
	out, _ = n.run(t, docs.Operating, docs.KeyKubeadmRender)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the rendered manifest:\n%s", out)
	}
	c := apiServerContainer(t, readPod(t, filepath.Join(n.root, renderedManifest)))
	want, _ := flagValue(apiServerContainer(t, readPod(t, filepath.Join(n.root, "kube-apiserver.yaml.stock"))).Command, "advertise-address")
	checkRendersOurs(t, "the rendered manifest", c, want, docs.FragmentPlugins(t, fragment))
	if got, _ := flagValue(c.Command, "admission-control-config-file"); got != "/etc/kubernetes/portcullis/admission-config.yaml" {
		t.Errorf("the rendered manifest's --admission-control-config-file=%q", got)
	}

	// 5. Upload the merged configuration and put the manifest in place.
	n.run(t, docs.Operating, docs.KeyKubeadmUpload)
	cm, err := n.server.Client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "kubeadm-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uploaded := cm.Data["ClusterConfiguration"]
	for _, want := range append(docs.FragmentPlugins(t, fragment), "admission-control-config-file", "/etc/kubernetes/portcullis") {
		if !strings.Contains(uploaded, want) {
			t.Errorf("the uploaded ClusterConfiguration lacks %q:\n%s", want, uploaded)
		}
	}
	if !bytes.Equal(docs.ReadFile(t, running), docs.ReadFile(t, filepath.Join(n.root, renderedManifest))) {
		t.Errorf("/etc/kubernetes/manifests/kube-apiserver.yaml is not the rendered manifest")
	}
	// Step 1 again, as an operator going through the guide once more: stock's backup stays.
	n.run(t, docs.Operating, docs.KeyKubeadmBackup)
	if got := docs.ReadFile(t, filepath.Join(n.root, "kube-apiserver.yaml.stock")); !bytes.Equal(got, stock) {
		t.Errorf("step 1 run again after the swap replaced stock's backup with the running manifest")
	}

	// The kubelet restarts the pod from the new manifest; then the check, of that server.
	chains := n.serveManifest(t)
	for _, name := range docs.FragmentPlugins(t, fragment) {
		if !slices.Contains(chains.Mutating, name) && !slices.Contains(chains.Validating, name) {
			t.Errorf("the server started from the installed manifest does not run %s: mutating %v, validating %v", name, chains.Mutating, chains.Validating)
		}
	}
	out, _ = n.run(t, docs.Operating, docs.KeyKubeadmCheck)
	if !strings.Contains(out, "ok") || !strings.Contains(out, "Server Version: "+version(t)) {
		t.Errorf("the check printed:\n%s", out)
	}

	// 6. A new control-plane node: its manifest as kubeadm join renders it, from the uploaded
	// configuration and the patch, then preflight (the block runs under errexit).
	const newNodeAddress = "192.0.2.11"
	joinOpts := n.opts
	joinOpts.Env = append(slices.Clone(n.opts.Env), "NODE_NAME=cp-2", "NODE_ADDRESS="+newNodeAddress)
	joinBlock := docs.Block(t, docs.Operating, docs.KeyKubeadmJoinRender)
	out, _ = docs.Run(t, joinBlock, joinOpts)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the joining node's manifest:\n%s", out)
	}
	joined := apiServerContainer(t, readPod(t, filepath.Join(n.root, "portcullis-join-render", "kube-apiserver.yaml")))
	checkRendersOurs(t, "the joining node's manifest", joined, newNodeAddress, docs.FragmentPlugins(t, fragment))
	// Without the patch, kubeadm renders stock's image with our plugin names: refused.
	withoutPatch := strings.Replace(joinBlock, "patches:\n  directory: /etc/kubernetes/patches\n", "", 1)
	if withoutPatch == joinBlock {
		t.Fatalf("the join block sets no patches directory:\n%s", joinBlock)
	}
	stdout, stderr, err := docs.Exec(t, withoutPatch, joinOpts)
	if err == nil || !strings.Contains(stdout, "is not a Portcullis release, but the command line names Portcullis's plugins") {
		t.Errorf("preflight of a join rendered without the patch: error %v\n%s\n%s", err, stdout, stderr)
	}

	// Since the swap the cluster was upgraded to the next patch (kubeadm upgrade apply writes
	// the ClusterConfiguration's kubernetesVersion): a rollback must render stock at that
	// version, never put back the manifest saved at install, which would downgrade.
	upgradedTo := nextPatch(t, kubernetesVersion(t))
	cm.Data["ClusterConfiguration"] = strings.Replace(cm.Data["ClusterConfiguration"], "kubernetesVersion: "+kubernetesVersion(t), "kubernetesVersion: "+upgradedTo, 1)
	if !strings.Contains(cm.Data["ClusterConfiguration"], "kubernetesVersion: "+upgradedTo) {
		t.Fatalf("the uploaded ClusterConfiguration names no kubernetesVersion %s:\n%s", kubernetesVersion(t), cm.Data["ClusterConfiguration"])
	}
	if cm, err = n.server.Client.CoreV1().ConfigMaps("kube-system").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// 4. Rolling back: our patch out, our names out of the ClusterConfiguration (the edit),
	// step 5's first block without its last command (the preflight against the running
	// manifest), then the check and install of the render.
	n.run(t, docs.Operating, docs.KeyRollbackKubeadm)
	writeFile(t, clusterFile, string(docs.RemovePlugins(t, docs.ReadFile(t, clusterFile), docs.FragmentPlugins(t, fragment))))
	docs.Run(t, docs.RenderWithoutPreflight(t), n.opts)
	out, _ = n.run(t, docs.Operating, docs.KeyRollbackRender)
	stockImage := "registry.k8s.io/kube-apiserver:" + upgradedTo
	// The rollback's first block moved step 1's backup away, so that the next swap saves the
	// manifest that runs then.
	if _, err := os.Stat(filepath.Join(n.root, "kube-apiserver.yaml.stock")); err == nil {
		t.Error("the rollback left step 1's backup in place: a later swap would keep it")
	}
	movedAway, _ := filepath.Glob(filepath.Join(n.root, "kube-apiserver.yaml.stock.*"))
	if len(movedAway) != 1 {
		t.Fatalf("step 1's backup moved away: %q, want one", movedAway)
	}
	if saved := apiServerContainer(t, readPod(t, movedAway[0])).Image; saved == stockImage {
		t.Fatalf("the manifest saved at install runs %s already: the rollback could not be told from restoring it", saved)
	}
	if !strings.Contains(out, "image: "+stockImage) {
		t.Errorf("the rollback's render does not run %s:\n%s", stockImage, out)
	}
	if c := apiServerContainer(t, readPod(t, running)); c.Image != stockImage {
		t.Errorf("after the rollback the manifest runs %s, want %s", c.Image, stockImage)
	}
	cm, err = n.server.Client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "kubeadm-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cm.Data["ClusterConfiguration"], "SecurityContextDeny") {
		t.Errorf("after the rollback the ClusterConfiguration still enables our plugins:\n%s", cm.Data["ClusterConfiguration"])
	}
}

// nextPatch is the Kubernetes patch release after v (v1.M.P).
func nextPatch(t *testing.T, v string) string {
	t.Helper()
	var major, minor, patch int
	if _, err := fmt.Sscanf(v, "v%d.%d.%d", &major, &minor, &patch); err != nil {
		t.Fatalf("%q is not a version v1.M.P: %v", v, err)
	}
	return fmt.Sprintf("v%d.%d.%d", major, minor, patch+1)
}

// TestKubeadmRefusesPatchesBesideConfig holds the real kubeadm to what docs/operating.md
// says of an earlier form of step 5: `--patches` beside `--config` is refused, which is why
// the patches directory is in the InitConfiguration.
func TestKubeadmRefusesPatchesBesideConfig(t *testing.T) {
	tl := findTools(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "kubeadm.yaml")
	writeFile(t, config, "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: "+kubernetesVersion(t)+"\n")
	patches := filepath.Join(dir, "patches")
	writeFile(t, filepath.Join(patches, "kube-apiserver.yaml"), string(docs.ReadFile(t, filepath.Join(docs.RepoRoot(t), docs.StaticPodPatch))))
	render := filepath.Join(dir, "render")
	_, stderr, err := docs.Exec(t, "KUBEADM_INIT_DRYRUN_DIR="+render+" kubeadm init phase control-plane apiserver --config "+config+" --patches "+patches+" --dry-run\n",
		docs.Options{Mounts: map[string]string{"/etc/kubernetes": t.TempDir()}, Path: []string{tl.dir}, Dir: dir})
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("kubeadm accepted --patches beside --config (%v); stderr:\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "can not mix '--config' with arguments [patches]") {
		t.Errorf("kubeadm failed, but not for mixing --config and --patches:\n%s", stderr)
	}
}

// TestOperatingUpgrade runs 5. Upgrading's step 2 on a node whose patch names the previous
// release (here v1.37.1+portcullis.1, upgrading to this one), then renders with the real
// kubeadm at the version kubeadm upgrade apply would: the patch's image is the new release,
// for that version, and the new release's preflight accepted it. A stale tag is refused
// (TestCheckKubeadmPatches): kubeadm would skip kube-apiserver as unchanged.
func TestOperatingUpgrade(t *testing.T) {
	tl := findTools(t)
	dir := operatorDir(t, tl)
	etc := t.TempDir()
	opts := docs.Options{Mounts: map[string]string{"/etc/kubernetes": etc}, Path: []string{tl.dir}, Dir: dir}
	shipped := string(docs.ReadFile(t, filepath.Join(docs.RepoRoot(t), docs.StaticPodPatch)))
	previous := strings.ReplaceAll(shipped, kubeadmImageTag(version(t)), "v1.37.1_portcullis.1")
	if previous == shipped {
		t.Fatalf("%s does not name the image by the tag %s", docs.StaticPodPatch, kubeadmImageTag(version(t)))
	}
	writeFile(t, filepath.Join(etc, "patches", "kube-apiserver.yaml"), previous)

	block := docs.Block(t, docs.Operating, docs.KeyUpgradePatch)
	out, _ := docs.Run(t, block, opts)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("the new release's preflight of the patch:\n%s", out)
	}
	if got := string(docs.ReadFile(t, filepath.Join(etc, "patches", "kube-apiserver.yaml"))); got != shipped {
		t.Errorf("after step 2 the patch is\n%s\nwant this release's\n%s", got, shipped)
	}

	// kubeadm upgrade apply renders with the patches at NEW's Kubernetes version.
	// The CRI socket is named, so kubeadm does not look for a runtime.
	config := kubeadmConfiguration(t, "  criSocket: unix:///run/containerd/containerd.sock\npatches:\n  directory: /etc/kubernetes/patches\n")
	render := t.TempDir()
	docs.Run(t, "KUBEADM_INIT_DRYRUN_DIR="+render+" kubeadm init phase control-plane apiserver --config "+config+" --dry-run\n", opts)
	if got := apiServerContainer(t, readPod(t, filepath.Join(render, "kube-apiserver.yaml"))).Image; got != docs.PatchImage(t, filepath.Join(docs.RepoRoot(t), docs.StaticPodPatch)) {
		t.Errorf("kubeadm renders %s after step 2, want %s", got, docs.PatchImage(t, filepath.Join(docs.RepoRoot(t), docs.StaticPodPatch)))
	}
}

// kubeadmImageTag is the tag kubeadm gives a version: "+" becomes "_".
func kubeadmImageTag(version string) string { return strings.ReplaceAll(version, "+", "_") }

// checkRendersOurs checks a kube-apiserver container kubeadm rendered with our patch (what
// names it): the patch's image, address as its advertise address, and plugins enabled.
func checkRendersOurs(t *testing.T, what string, c corev1.Container, address string, plugins []string) {
	t.Helper()
	if want := docs.PatchImage(t, filepath.Join(docs.RepoRoot(t), docs.StaticPodPatch)); c.Image != want {
		t.Errorf("%s runs %s, want the patch's %s", what, c.Image, want)
	}
	if got, _ := flagValue(c.Command, "advertise-address"); got != address {
		t.Errorf("%s advertises %q, want %s", what, got, address)
	}
	enabled, _ := flagValue(c.Command, "enable-admission-plugins")
	for _, name := range plugins {
		if !slices.Contains(strings.Split(enabled, ","), name) {
			t.Errorf("%s's --enable-admission-plugins=%s lacks %s", what, enabled, name)
		}
	}
}

// TestOperatingKubeadmTwoRuntimes runs steps 3 to 5 on a node with a second container
// runtime's socket (CRI-O's beside containerd's), where kubeadm refuses to pick a runtime
// when it looks for one: step 5's render does not look, its upload does and fails; with the
// line the page says to add to the InitConfiguration, step 5 passes whole.
func TestOperatingKubeadmTwoRuntimes(t *testing.T) {
	crio := t.TempDir()
	n := kubeadmNodeWith(t, map[string]string{"/run/crio": crio})
	listenUnix(t, filepath.Join(crio, "crio.sock"))
	n.run(t, docs.Operating, docs.KeyKubeadmInstall)
	n.run(t, docs.Operating, docs.KeyKubeadmGetConfig)
	clusterFile := filepath.Join(n.root, "kubeadm-cluster.yaml")
	writeFile(t, clusterFile, string(docs.MergeClusterConfiguration(t, docs.ReadFile(t, clusterFile), docs.ReadFile(t, filepath.Join(docs.RepoRoot(t), docs.KubeadmFragment)))))

	render := docs.Block(t, docs.Operating, docs.KeyKubeadmRender)
	out, _ := docs.Run(t, render, n.opts)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the render on a node with two runtimes:\n%s", out)
	}
	upload := docs.Block(t, docs.Operating, docs.KeyKubeadmUpload)
	if _, stderr, err := docs.Exec(t, upload, n.opts); err == nil || !strings.Contains(stderr, "found multiple CRI endpoints on the host") {
		t.Fatalf("step 5's upload with two runtimes: error %v, want kubeadm's refusal to pick one\n%s", err, stderr)
	}

	// The page's line, beside localAPIEndpoint in the InitConfiguration step 5 writes.
	const line = "nodeRegistration: {criSocket: unix:///run/containerd/containerd.sock}"
	if !strings.Contains(string(docs.ReadFile(t, filepath.Join(docs.RepoRoot(t), docs.Operating))), "`"+line+"`") {
		t.Fatalf("docs/operating.md no longer says to add %s", line)
	}
	withRuntime := strings.Replace(render, "localAPIEndpoint:\n", line+"\nlocalAPIEndpoint:\n", 1)
	if withRuntime == render {
		t.Fatalf("step 5's render writes no localAPIEndpoint:\n%s", render)
	}
	out, _ = docs.Run(t, withRuntime, n.opts)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the render with the runtime named:\n%s", out)
	}
	docs.Run(t, upload, n.opts)
}
