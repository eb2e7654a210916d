package docs_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/test/docs"
)

// TestKubeadmRefusesPatchesBesideConfig holds the real kubeadm to what docs/operating.md
// says of an earlier form of step 5: `--patches` beside `--config` is refused, which is why
// the patches directory is in the InitConfiguration.
func TestKubeadmRefusesPatchesBesideConfig(t *testing.T) {
	tl := findTools(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "kubeadm.yaml")
	writeFile(t, config, "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: "+kubernetesVersion(t)+"\n")
	patches := filepath.Join(dir, "patches")
	writeFile(t, filepath.Join(patches, "kube-apiserver.yaml"), string(readFile(t, filepath.Join(docs.RepoRoot(t), docs.StaticPodPatch))))
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
	shipped := string(readFile(t, filepath.Join(docs.RepoRoot(t), docs.StaticPodPatch)))
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
	if got := string(readFile(t, filepath.Join(etc, "patches", "kube-apiserver.yaml"))); got != shipped {
		t.Errorf("after step 2 the patch is\n%s\nwant this release's\n%s", got, shipped)
	}

	// kubeadm upgrade apply renders with the patches at NEW's Kubernetes version.
	// The CRI socket is named, so kubeadm does not look for a runtime.
	config := kubeadmConfiguration(t, "  criSocket: unix:///run/containerd/containerd.sock\npatches:\n  directory: /etc/kubernetes/patches\n")
	render := t.TempDir()
	docs.Run(t, "KUBEADM_INIT_DRYRUN_DIR="+render+" kubeadm init phase control-plane apiserver --config "+config+" --dry-run\n", opts)
	if got := apiServerContainer(t, readPod(t, filepath.Join(render, "kube-apiserver.yaml"))).Image; got != docs.PatchImage(t) {
		t.Errorf("kubeadm renders %s after step 2, want %s", got, docs.PatchImage(t))
	}
}

// kubeadmImageTag is the tag kubeadm gives a version: "+" becomes "_".
func kubeadmImageTag(version string) string { return strings.ReplaceAll(version, "+", "_") }
