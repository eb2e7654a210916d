package apiserver

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// The deploy kit's kubeadm files.
const (
	kitKubeadmConfig = "build/deploy/static-pod/kubeadm-config.yaml"
	kitPatch         = "build/deploy/static-pod/kube-apiserver.yaml"
	kitAdmission     = "build/deploy/static-pod/admission-config.yaml"
	// kitConfigDir is where kubeadm-config.yaml mounts the admission configuration from.
	kitConfigDir = "/etc/kubernetes/portcullis"
)

// TestKubeadmRendersTheDeployKit is the kubeadm drop-in on this minor, with this minor's
// kubeadm CLI: a node's kube-apiserver rendered from the deploy kit's ClusterConfiguration
// (kubeadm-config.yaml) and static pod patch, the patch's image set to this minor's release
// as an operator of this minor sets it. The manifest runs that image with the kit's plugins,
// its admission configuration mounted read-only; its command line, with the mounted directory
// standing for the host's, serves with every plugin of the kit in the chain.
func TestKubeadmRendersTheDeployKit(t *testing.T) {
	bins := framework.FindBinaries(t)
	root := framework.RepoRoot(t)
	var cluster map[string]any
	if err := yaml.Unmarshal(readFileBytes(t, filepath.Join(root, kitKubeadmConfig)), &cluster); err != nil {
		t.Fatalf("%s: %v", kitKubeadmConfig, err)
	}

	// The kit names the newest minor's release; this minor's is its own.
	shipped := readFile(t, filepath.Join(root, kitPatch))
	var patch corev1.Pod
	if err := yaml.Unmarshal([]byte(shipped), &patch); err != nil || len(patch.Spec.Containers) != 1 {
		t.Fatalf("%s is not a patch of one container (%v)", kitPatch, err)
	}
	shippedImage := patch.Spec.Containers[0].Image
	repository := shippedImage[:strings.LastIndex(shippedImage, ":")]
	image := repository + ":" + strings.ReplaceAll(framework.ReleaseVersion(t), "+", "_")
	patches := filepath.Dir(writeTemp(t, "kube-apiserver.yaml", strings.ReplaceAll(shipped, shippedImage, image)))

	node := newKubeadmNode(t, bins, cluster, patches)
	c := node.container(t)
	if c.Image != image {
		t.Errorf("kubeadm renders the image %s, want %s", c.Image, image)
	}
	args := node.manifestArgs(t)
	plugins := deployedPlugins(t)
	for _, want := range []string{"--enable-admission-plugins=" + plugins, "--admission-control-config-file=" + kitConfigDir + "/admission-config.yaml"} {
		if !slices.Contains(args, want) {
			t.Errorf("the rendered command line lacks %s: %v", want, args)
		}
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == kitConfigDir && m.ReadOnly }) {
		t.Errorf("the rendered container does not mount %s read-only: %+v", kitConfigDir, c.VolumeMounts)
	}

	// In the pod, the host's directory is mounted at the same path; here the kit's directory
	// stands for it.
	for i, arg := range args {
		if rest, ok := strings.CutPrefix(arg, "--admission-control-config-file="+kitConfigDir+"/"); ok {
			args[i] = "--admission-control-config-file=" + filepath.Join(root, filepath.Dir(kitAdmission), rest)
		}
	}
	log := node.serve(t, bins.APIServer, args)
	chains, err := controlplane.ParseChains(readFileBytes(t, log))
	if err != nil {
		t.Fatalf("%s: %v", log, err)
	}
	for _, plugin := range strings.Split(plugins, ",") {
		if !slices.Contains(chains.Mutating, plugin) && !slices.Contains(chains.Validating, plugin) {
			t.Errorf("%s is in neither admission chain: %+v", plugin, chains)
		}
	}
}
