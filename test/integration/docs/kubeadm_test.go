package docs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-k8s/portcullis/test/docs"
)

const (
	operating        = "docs/operating.md"
	staticPodPatch   = "build/deploy/static-pod/kube-apiserver.yaml"
	kubeadmFragment  = "build/deploy/static-pod/kubeadm-config.yaml"
	admissionConfig  = "build/deploy/static-pod/admission-config.yaml"
	renderedManifest = "portcullis-render/kube-apiserver.yaml" // under /root
)

// TestOperatingKubeadm follows docs/operating.md's "2a. A kubeadm node" on a node kubeadm
// laid out, running each block as written: the README's preflight of the running manifest,
// then steps 1, 3 and 4 (the ConfigMap read; the edit is the operator's, done here in Go as
// the step describes), 5 (render and preflight, upload) and the check after it.
func TestOperatingKubeadm(t *testing.T) {
	n := kubeadmNode(t)
	repo := docs.RepoRoot(t)
	running := filepath.Join(n.etc, "manifests", "kube-apiserver.yaml")
	stock := readFile(t, running)

	// The README's preflight of the node as it runs.
	out, _ := n.run(t, "README.md", docs.KeyReadmePreflight)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the running manifest:\n%s", out)
	}

	// 1. Back up the manifest.
	n.run(t, operating, docs.KeyKubeadmBackup)
	if got := readFile(t, filepath.Join(n.root, "kube-apiserver.yaml.stock")); !bytes.Equal(got, stock) {
		t.Errorf("/root/kube-apiserver.yaml.stock is not the running manifest")
	}

	// 3. Install the patch and the admission configuration.
	n.run(t, operating, docs.KeyKubeadmInstall)
	for installed, shipped := range map[string]string{"patches/kube-apiserver.yaml": staticPodPatch, "portcullis/admission-config.yaml": admissionConfig} {
		if !bytes.Equal(readFile(t, filepath.Join(n.etc, installed)), readFile(t, filepath.Join(repo, shipped))) {
			t.Errorf("/etc/kubernetes/%s is not %s", installed, shipped)
		}
	}

	// 4. Read the ClusterConfiguration, then merge kubeadm-config.yaml into it.
	n.run(t, operating, docs.KeyKubeadmGetConfig)
	clusterFile := filepath.Join(n.root, "kubeadm-cluster.yaml")
	cluster := readFile(t, clusterFile)
	if !bytes.Contains(cluster, []byte("kind: ClusterConfiguration")) {
		t.Fatalf("/root/kubeadm-cluster.yaml holds no ClusterConfiguration:\n%s", cluster)
	}
	fragment := readFile(t, filepath.Join(repo, kubeadmFragment))
	writeFile(t, clusterFile, string(mergeClusterConfiguration(t, cluster, fragment)))

	// 5. Render this node's manifest and preflight it against the running one (the block
	// runs under errexit: preflight's exit code 0 is required).
	out, _ = n.run(t, operating, docs.KeyKubeadmRender)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the rendered manifest:\n%s", out)
	}
	rendered := readPod(t, filepath.Join(n.root, renderedManifest))
	c := apiServerContainer(t, rendered)
	if want := patchImage(t); c.Image != want {
		t.Errorf("the rendered manifest runs %s, want the patch's %s", c.Image, want)
	}
	want, _ := flagValue(apiServerContainer(t, readPod(t, filepath.Join(n.root, "kube-apiserver.yaml.stock"))).Command, "advertise-address")
	if got, _ := flagValue(c.Command, "advertise-address"); got != want {
		t.Errorf("the rendered manifest advertises %q, the running one %q", got, want)
	}
	enabled, _ := flagValue(c.Command, "enable-admission-plugins")
	for _, name := range fragmentPlugins(t, fragment) {
		if !slices.Contains(strings.Split(enabled, ","), name) {
			t.Errorf("the rendered manifest's --enable-admission-plugins=%s lacks %s", enabled, name)
		}
	}
	if got, _ := flagValue(c.Command, "admission-control-config-file"); got != "/etc/kubernetes/portcullis/admission-config.yaml" {
		t.Errorf("the rendered manifest's --admission-control-config-file=%q", got)
	}

	// 5. Upload the merged configuration and put the manifest in place.
	n.run(t, operating, docs.KeyKubeadmUpload)
	cm, err := n.server.Client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "kubeadm-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uploaded := cm.Data["ClusterConfiguration"]
	for _, want := range append(fragmentPlugins(t, fragment), "admission-control-config-file", "/etc/kubernetes/portcullis") {
		if !strings.Contains(uploaded, want) {
			t.Errorf("the uploaded ClusterConfiguration lacks %q:\n%s", want, uploaded)
		}
	}
	if !bytes.Equal(readFile(t, running), readFile(t, filepath.Join(n.root, renderedManifest))) {
		t.Errorf("/etc/kubernetes/manifests/kube-apiserver.yaml is not the rendered manifest")
	}

	// Then the check.
	out, _ = n.run(t, operating, docs.KeyKubeadmCheck)
	if !strings.Contains(out, "ok") || !strings.Contains(out, "Server Version: "+version(t)) {
		t.Errorf("the check printed:\n%s", out)
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
	n.run(t, operating, docs.KeyRollbackKubeadm)
	writeFile(t, clusterFile, string(removePlugins(t, readFile(t, clusterFile), fragmentPlugins(t, fragment))))
	render := docs.Block(t, operating, docs.KeyKubeadmRender)
	last := strings.LastIndex(render, "./kube-apiserver preflight")
	if last < 0 {
		t.Fatalf("step 5's first block has no preflight command last:\n%s", render)
	}
	docs.Run(t, render[:last], n.opts)
	out, _ = n.run(t, operating, docs.KeyRollbackRender)
	stockImage := "registry.k8s.io/kube-apiserver:" + upgradedTo
	if saved := apiServerContainer(t, readPod(t, filepath.Join(n.root, "kube-apiserver.yaml.stock"))).Image; saved == stockImage {
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

// removePlugins does the rollback's edit: our plugin names taken out of the
// ClusterConfiguration's enable-admission-plugins (kubeadm's own NodeRestriction stays).
func removePlugins(t *testing.T, cluster []byte, ours []string) []byte {
	t.Helper()
	var c map[string]any
	if err := yaml.Unmarshal(cluster, &c); err != nil {
		t.Fatal(err)
	}
	apiServer, _ := c["apiServer"].(map[string]any)
	args, _ := apiServer["extraArgs"].([]any)
	for _, a := range args {
		arg := a.(map[string]any)
		if arg["name"] != "enable-admission-plugins" {
			continue
		}
		names := strings.Split(arg["value"].(string), ",")
		names = slices.DeleteFunc(names, func(name string) bool { return name != "NodeRestriction" && slices.Contains(ours, name) })
		arg["value"] = strings.Join(names, ",")
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
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
	writeFile(t, filepath.Join(patches, "kube-apiserver.yaml"), string(readFile(t, filepath.Join(docs.RepoRoot(t), staticPodPatch))))
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

// mergeClusterConfiguration does step 4's edit: kubeadm-config.yaml's apiServer.extraArgs and
// extraVolumes merged into the cluster's (our plugin names added to the cluster's own
// enable-admission-plugins; every other flag and volume added).
func mergeClusterConfiguration(t *testing.T, cluster, fragment []byte) []byte {
	t.Helper()
	var c, f map[string]any
	if err := yaml.Unmarshal(cluster, &c); err != nil {
		t.Fatalf("the ClusterConfiguration: %v", err)
	}
	if err := yaml.Unmarshal(fragment, &f); err != nil {
		t.Fatalf("%s: %v", kubeadmFragment, err)
	}
	fa, _ := f["apiServer"].(map[string]any)
	ca, _ := c["apiServer"].(map[string]any)
	if ca == nil {
		ca = map[string]any{}
		c["apiServer"] = ca
	}
	args, _ := ca["extraArgs"].([]any)
	for _, a := range fa["extraArgs"].([]any) {
		ours := a.(map[string]any)
		i := slices.IndexFunc(args, func(x any) bool { return x.(map[string]any)["name"] == ours["name"] })
		switch {
		case i < 0:
			args = append(args, ours)
		case ours["name"] == "enable-admission-plugins":
			theirs := args[i].(map[string]any)
			names := strings.Split(theirs["value"].(string), ",")
			for _, name := range strings.Split(ours["value"].(string), ",") {
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
			theirs["value"] = strings.Join(names, ",")
		default:
			t.Fatalf("the cluster already sets %s: the fixture's merge does not handle it", ours["name"])
		}
	}
	ca["extraArgs"] = args
	volumes, _ := ca["extraVolumes"].([]any)
	ca["extraVolumes"] = append(volumes, fa["extraVolumes"].([]any)...)
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fragmentPlugins returns the plugin names kubeadm-config.yaml enables.
func fragmentPlugins(t *testing.T, fragment []byte) []string {
	t.Helper()
	var f struct {
		APIServer struct {
			ExtraArgs []struct{ Name, Value string } `json:"extraArgs"`
		} `json:"apiServer"`
	}
	if err := yaml.Unmarshal(fragment, &f); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.APIServer.ExtraArgs {
		if a.Name == "enable-admission-plugins" {
			return strings.Split(a.Value, ",")
		}
	}
	t.Fatalf("%s enables no plugin", kubeadmFragment)
	return nil
}

// patchImage is the image the shipped kubeadm patch sets.
func patchImage(t *testing.T) string {
	t.Helper()
	var patch struct {
		Spec struct {
			Containers []struct{ Name, Image string } `json:"containers"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(docs.RepoRoot(t), staticPodPatch)), &patch); err != nil {
		t.Fatal(err)
	}
	if len(patch.Spec.Containers) != 1 || patch.Spec.Containers[0].Image == "" {
		t.Fatalf("%s sets no image", staticPodPatch)
	}
	return patch.Spec.Containers[0].Image
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
	shipped := string(readFile(t, filepath.Join(docs.RepoRoot(t), staticPodPatch)))
	previous := strings.ReplaceAll(shipped, kubeadmImageTag(version(t)), "v1.37.1_portcullis.1")
	if previous == shipped {
		t.Fatalf("%s does not name the image by the tag %s", staticPodPatch, kubeadmImageTag(version(t)))
	}
	writeFile(t, filepath.Join(etc, "patches", "kube-apiserver.yaml"), previous)

	block := docs.Block(t, operating, docs.KeyUpgradePatch)
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
	if got := apiServerContainer(t, readPod(t, filepath.Join(render, "kube-apiserver.yaml"))).Image; got != patchImage(t) {
		t.Errorf("kubeadm renders %s after step 2, want %s", got, patchImage(t))
	}
}

// kubeadmImageTag is the tag kubeadm gives a version: "+" becomes "_".
func kubeadmImageTag(version string) string { return strings.ReplaceAll(version, "+", "_") }
