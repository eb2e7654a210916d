package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
	"sigs.k8s.io/yaml"
)

// The kubeadm deployment (build/deploy/static-pod/) is checked here with kubeadm's own code:
// a node's manifest is what `kubeadm init phase control-plane apiserver --config
// <ClusterConfiguration> --patches <dir>` writes (configutil.BytesToInitConfiguration, then
// controlplane.CreateStaticPodFiles), and the verdicts are those of the release binary's
// `kube-apiserver preflight -o json`.

const (
	kubeadmConfigFragment = "build/deploy/static-pod/kubeadm-config.yaml"
	// patchImageRepository is where the shipped patch takes the image from: a placeholder
	// for the operator's registry (docs/release.md pushes the image there).
	patchImageRepository = "registry.example.com/portcullis"
)

// nodeConfiguration is kubeadm's InitConfiguration for a node advertising address; the CRI
// socket is set so kubeadm does not look for a runtime.
func nodeConfiguration(address string) string {
	return `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: ` + address + `
  bindPort: 6443
nodeRegistration:
  name: cp-1
  criSocket: unix:///run/containerd/containerd.sock
`
}

// renderAPIServer writes the kube-apiserver manifest kubeadm renders for a cluster
// configuration (a ClusterConfiguration document; kubeadm defaults what it leaves out) on a
// node advertising address, with the patches in patchDir ("" for none), at Kubernetes
// kubernetesVersion ("" for the release's), and returns its path and the pod.
func renderAPIServer(t *testing.T, cluster, address, patchDir, kubernetesVersion string) (string, corev1.Pod) {
	t.Helper()
	if kubernetesVersion == "" {
		kubernetesVersion, _, _ = strings.Cut(readVersion(t), "+")
	}
	docs := nodeConfiguration(address) + "---\n" + cluster + "\nkubernetesVersion: " + kubernetesVersion + "\n"
	cfg, err := configutil.BytesToInitConfiguration([]byte(docs), true)
	if err != nil {
		t.Fatalf("kubeadm refuses the configuration: %v\n%s", err, docs)
	}
	dir := t.TempDir()
	if err := controlplane.CreateStaticPodFiles(dir, patchDir, &cfg.ClusterConfiguration, &cfg.LocalAPIEndpoint, false, kubeadmconstants.KubeAPIServer); err != nil {
		t.Fatalf("kubeadm cannot render the kube-apiserver manifest: %v", err)
	}
	path := filepath.Join(dir, kubeadmconstants.KubeAPIServer+".yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return path, pod
}

// defaultCluster is a ClusterConfiguration with nothing set: kubeadm's defaults.
const defaultCluster = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration"

// shippedPatches is a --patches directory holding the shipped patch.
func shippedPatches(t *testing.T) string {
	t.Helper()
	return patchesWith(t, mustRead(t, repoFile(t, staticPodPatch)))
}

func patchesWith(t *testing.T, patch string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(staticPodPatch)), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// preflightReport is the part of `preflight -o json` these tests read.
type preflightReport struct {
	Verdict  string   `json:"verdict"`
	ExitCode int      `json:"exitCode"`
	Problems []string `json:"problems"`
	Warnings []string `json:"warnings"`
	Notes    []string `json:"notes"`
}

// preflight runs the release binary's preflight with -o json and returns its report and
// exit code.
func preflight(t *testing.T, args ...string) (preflightReport, int) {
	t.Helper()
	r := loadRelease(t)
	cmd := exec.Command(r.binary(hostPlatform(t)), append([]string{"preflight", "-o", "json"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("preflight %q: %v", args, err)
		}
		code = exit.ExitCode()
	}
	var report preflightReport
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("preflight %q (exit %d) printed no JSON report: %v\nstdout:\n%s\nstderr:\n%s", args, code, err, stdout.String(), stderr.String())
	}
	if report.ExitCode != code {
		t.Errorf("preflight %q: the report says exit code %d, the process exited %d", args, report.ExitCode, code)
	}
	return report, code
}

// containing returns the messages that hold text.
func containing(messages []string, text string) []string {
	return slices.DeleteFunc(slices.Clone(messages), func(m string) bool { return !strings.Contains(m, text) })
}

// comparisonProblems are the problems --running-manifest finds (not those of files the
// test machine lacks).
func comparisonProblems(r preflightReport) []string {
	var out []string
	for _, p := range r.Problems {
		if strings.Contains(p, "running manifest") || strings.Contains(p, "is given 2 times") {
			out = append(out, p)
		}
	}
	return out
}

// TestKubeadmDeployment renders a node's manifest from kubeadm's defaults with the
// ClusterConfiguration fragment merged in and the patch, as docs/operating.md (2a) does.
func TestKubeadmDeployment(t *testing.T) {
	version := readVersion(t)
	kubeVersion, _, _ := strings.Cut(version, "+")
	stockPath, stock := renderAPIServer(t, defaultCluster, "10.0.0.5", "", "")
	stockContainer := apiServerContainer(t, stock)
	if want := "registry.k8s.io/kube-apiserver:" + kubeVersion; stockContainer.Image != want {
		t.Fatalf("kubeadm's pod runs %s, want %s", stockContainer.Image, want)
	}
	oursPath, ours := renderAPIServer(t, mustRead(t, repoFile(t, kubeadmConfigFragment)), "10.0.0.5", shippedPatches(t), "")
	c := apiServerContainer(t, ours)

	t.Run("the patch swaps the image and nothing else", func(t *testing.T) {
		if want := kubeadmAPIServerImage(t, version, patchImageRepository); c.Image != want {
			t.Errorf("the patched pod runs %s, want %s: kubeadm config images list --kubernetes-version %s --image-repository %s names that", c.Image, want, version, patchImageRepository)
		}
		var patch map[string]any
		if err := yaml.Unmarshal([]byte(mustRead(t, repoFile(t, staticPodPatch))), &patch); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "kube-apiserver", "image": c.Image}}}}
		if got, _ := json.Marshal(patch); string(got) != mustJSON(t, want) {
			t.Errorf("%s patches %s; it must set the image only, the flags are the ClusterConfiguration's", staticPodPatch, got)
		}
	})

	t.Run("the flags", func(t *testing.T) {
		enabled, configFile := parseAPIServerFlags(t, c.Command[1:])
		checkEnabled(t, kubeadmConfigFragment, enabled)
		checkPrerequisitesNamed(t, kubeadmConfigFragment, enabled)
		if want := "/etc/kubernetes/portcullis/" + filepath.Base(staticPodAdmission); configFile != want {
			t.Errorf("--admission-control-config-file=%s; the documented place for %s is %s", configFile, staticPodAdmission, want)
		}
		checkMountedReadOnly(t, ours, c, configFile)
	})

	t.Run("preflight finds every flag of kubeadm's kept", func(t *testing.T) {
		report, _ := preflight(t, "--manifest", oursPath, "--running-manifest", stockPath)
		if got := comparisonProblems(report); len(got) > 0 {
			t.Errorf("preflight finds the rendered manifest changes the running one's flags: %q", got)
		}
		for _, flag := range []string{"--admission-control-config-file", "--enable-admission-plugins"} {
			if len(containing(report.Notes, flag)) == 0 && len(containing(report.Problems, flag)) == 0 {
				t.Errorf("preflight says nothing of %s, which the deployment sets; notes: %q", flag, report.Notes)
			}
		}
	})

	t.Run("rendered without the patch: preflight refuses stock's image with our plugin names", func(t *testing.T) {
		// The workaround for kubeadm refusing --patches beside --config: render without the
		// patch. kubeadm then gives stock's image our flags, which it cannot run.
		path, _ := renderAPIServer(t, mustRead(t, repoFile(t, kubeadmConfigFragment)), "10.0.0.5", "", "")
		report, code := preflight(t, "--manifest", path, "--running-manifest", stockPath)
		want := "the image registry.k8s.io/kube-apiserver:" + kubeVersion + " is not a Portcullis release, but the command line names Portcullis's plugins"
		if code != 1 || len(containing(report.Problems, want)) == 0 {
			t.Errorf("preflight exits %d; want 1 and a problem saying %q; problems: %q", code, want, report.Problems)
		}
	})

	t.Run("stock refuses the flags, so kubeadm never renders stock with our settings dropped", func(t *testing.T) {
		// An upgrade without our patch renders stock's image with the ClusterConfiguration's
		// flags: stock must refuse to start, so that kubeadm upgrade restores the manifest.
		opts := apiserveroptions.NewServerRunOptions()
		fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
		for _, named := range opts.Flags().FlagSets {
			fs.AddFlagSet(named)
		}
		if err := fs.Parse(c.Command[1:]); err != nil {
			t.Fatal(err)
		}
		errs := opts.Admission.Validate()
		if len(errs) == 0 || !strings.Contains(errors.Join(errs...).Error(), "SecurityContextDeny") {
			t.Errorf("stock kube-apiserver accepts --enable-admission-plugins with our names (errors: %v); an upgrade without our patch would silently drop our plugins", errs)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkMountedReadOnly fails unless configFile comes into the container from the host through
// a read-only hostPath volume of type Directory at the same path.
func checkMountedReadOnly(t *testing.T, pod corev1.Pod, c corev1.Container, configFile string) {
	t.Helper()
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if strings.HasPrefix(configFile, strings.TrimSuffix(m.MountPath, "/")+"/") {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil {
		t.Fatalf("--admission-control-config-file=%s is under no volume mount of the container", configFile)
	}
	if !mount.ReadOnly {
		t.Errorf("volume mount %s is writable; the server only reads it", mount.Name)
	}
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == mount.Name })
	if i < 0 || pod.Spec.Volumes[i].HostPath == nil {
		t.Fatalf("volume %s is not a hostPath volume", mount.Name)
	}
	if hp := pod.Spec.Volumes[i].HostPath; hp.Path != mount.MountPath || hp.Type == nil || *hp.Type != corev1.HostPathDirectory {
		t.Errorf("volume %s mounts host path %s (type %v) at %s; want the same path, type Directory", mount.Name, hp.Path, hp.Type, mount.MountPath)
	}
}

// ownAdmission is a cluster that sets its own admission configuration through kubeadm
// (PodSecurity defaults, EventRateLimit), as docs/operating.md's example has it.
const ownAdmission = `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
apiServer:
  extraArgs:
  - name: enable-admission-plugins
    value: NodeRestriction,EventRateLimit
  - name: admission-control-config-file
    value: /etc/kubernetes/admission/cluster.yaml
  extraVolumes:
  - name: cluster-admission
    hostPath: /etc/kubernetes/admission
    mountPath: /etc/kubernetes/admission
    readOnly: true
    pathType: Directory
`

// TestKubeadmOwnAdmissionConfig: the deployment never replaces a cluster's own admission
// configuration. Appending our extraArgs to the cluster's (the trap) gives the server two
// --admission-control-config-file flags, of which it reads the last: preflight refuses it.
// Merged as the docs say (our names added to the cluster's list, our entries copied into the
// cluster's file, which stays), every flag the cluster had is kept.
func TestKubeadmOwnAdmissionConfig(t *testing.T) {
	runningPath, _ := renderAPIServer(t, ownAdmission, "10.0.0.5", "", "")
	var fragment struct {
		APIServer struct {
			ExtraArgs    []map[string]string `json:"extraArgs"`
			ExtraVolumes []map[string]any    `json:"extraVolumes"`
		} `json:"apiServer"`
	}
	if err := yaml.Unmarshal([]byte(mustRead(t, repoFile(t, kubeadmConfigFragment))), &fragment); err != nil {
		t.Fatal(err)
	}
	var ours string
	for _, a := range fragment.APIServer.ExtraArgs {
		if a["name"] == "enable-admission-plugins" {
			ours = a["value"]
		}
	}
	oursOnly := strings.TrimPrefix(ours, kubeadmDefaultPlugin+",")

	t.Run("appended: refused", func(t *testing.T) {
		appended := strings.Replace(ownAdmission, "  extraVolumes:\n", "  - name: enable-admission-plugins\n    value: "+ours+"\n  - name: admission-control-config-file\n    value: /etc/kubernetes/portcullis/admission-config.yaml\n  extraVolumes:\n", 1)
		path, _ := renderAPIServer(t, appended, "10.0.0.5", shippedPatches(t), "")
		report, code := preflight(t, "--manifest", path, "--running-manifest", runningPath)
		if code != 1 {
			t.Errorf("preflight exits %d, want 1 (not safe)", code)
		}
		for _, want := range []string{"--admission-control-config-file is given 2 times", "--admission-control-config-file changes from /etc/kubernetes/admission/cluster.yaml (the running manifest's) to /etc/kubernetes/portcullis/admission-config.yaml"} {
			if len(containing(report.Problems, want)) == 0 {
				t.Errorf("no problem says %q; problems: %q", want, report.Problems)
			}
		}
	})

	t.Run("merged as documented: every flag kept", func(t *testing.T) {
		merged := strings.Replace(ownAdmission, "value: NodeRestriction,EventRateLimit", "value: NodeRestriction,EventRateLimit,"+oursOnly, 1)
		path, pod := renderAPIServer(t, merged, "10.0.0.5", shippedPatches(t), "")
		report, _ := preflight(t, "--manifest", path, "--running-manifest", runningPath)
		if got := comparisonProblems(report); len(got) > 0 {
			t.Errorf("preflight finds the merged manifest changes the running one's flags: %q", got)
		}
		enabled, configFile := parseAPIServerFlags(t, apiServerContainer(t, pod).Command[1:])
		checkEnabled(t, "the merged configuration", enabled)
		if configFile != "/etc/kubernetes/admission/cluster.yaml" {
			t.Errorf("--admission-control-config-file=%s, want the cluster's own", configFile)
		}
	})
}

// TestKubeadmAdvertiseAddress: rendering on a node from a configuration that does not carry
// the node's address (kubeadm then takes the default route's) changes --advertise-address;
// preflight refuses the rendered manifest.
func TestKubeadmAdvertiseAddress(t *testing.T) {
	fragment := mustRead(t, repoFile(t, kubeadmConfigFragment))
	runningPath, _ := renderAPIServer(t, defaultCluster, "10.0.0.5", "", "")
	path, _ := renderAPIServer(t, fragment, "192.168.1.5", shippedPatches(t), "")
	report, code := preflight(t, "--manifest", path, "--running-manifest", runningPath)
	want := "--advertise-address changes from 10.0.0.5 (the running manifest's) to 192.168.1.5"
	if code != 1 || len(containing(report.Problems, want)) == 0 {
		t.Errorf("preflight exits %d; want 1 and a problem saying %q; problems: %q", code, want, report.Problems)
	}
}

// TestKubeadmUpgrade follows docs/operating.md's upgrade section: before `kubeadm upgrade
// apply vX`, the patch's tag becomes the Portcullis release for vX and that release's
// preflight checks it. With kubeadm's own rendering, the API server then runs the version of
// the other control-plane components, for the next patch and the next minor; and this
// release's preflight refuses its own patch for any other version.
func TestKubeadmUpgrade(t *testing.T) {
	version := readVersion(t)
	kubeVersion, _, _ := strings.Cut(version, "+")
	fragment := mustRead(t, repoFile(t, kubeadmConfigFragment))
	shipped := mustRead(t, repoFile(t, staticPodPatch))
	for _, target := range []string{kubeVersion, nextPatch(t, kubeVersion), nextMinor(t, kubeVersion)} {
		t.Run(target, func(t *testing.T) {
			patch := strings.ReplaceAll(shipped, imageTag(version), imageTag(target+"+portcullis.1"))
			if target != kubeVersion && patch == shipped {
				t.Fatalf("%s does not name the image by the tag %s", staticPodPatch, imageTag(version))
			}
			_, pod := renderAPIServer(t, fragment, "10.0.0.5", patchesWith(t, patch), target)
			image := apiServerContainer(t, pod).Image
			controllerManager := kubeadmControlPlaneImage(t, target, kubeadmconstants.KubeControllerManager)
			_, cmTag, _ := strings.Cut(controllerManager, ":")
			if !strings.Contains(image, ":"+cmTag+"_portcullis.") {
				t.Errorf("after kubeadm upgrade apply %s, kube-apiserver runs %s while kubeadm gives the controller manager %s", target, image, controllerManager)
			}

			// This release's preflight accepts its own patch for its own version only.
			report, code := preflight(t, "--kubeadm-patches", shippedPatches(t), "--kubernetes-version", target)
			if target == kubeVersion {
				if code != 0 {
					t.Errorf("preflight of the shipped patch for %s exits %d: %q", target, code, report.Problems)
				}
				return
			}
			for _, want := range []string{"runs Kubernetes " + kubeVersion + ", but kubeadm renders " + target + ": kube-apiserver would be older than", "this is the preflight of " + version} {
				if code != 1 || len(containing(report.Problems, want)) == 0 {
					t.Errorf("preflight --kubernetes-version %s with the shipped patch exits %d; want 1 and a problem saying %q; problems: %q", target, code, want, report.Problems)
				}
			}
		})
	}
}

// kubeadmControlPlaneImage is the image kubeadm gives a control-plane component at a version.
func kubeadmControlPlaneImage(t *testing.T, kubernetesVersion, component string) string {
	t.Helper()
	docs := nodeConfiguration("10.0.0.5") + "---\n" + defaultCluster + "\nkubernetesVersion: " + kubernetesVersion + "\n"
	cfg, err := configutil.BytesToInitConfiguration([]byte(docs), true)
	if err != nil {
		t.Fatal(err)
	}
	pod := controlplane.GetStaticPodSpecs(&cfg.ClusterConfiguration, &cfg.LocalAPIEndpoint, nil)[component]
	if len(pod.Spec.Containers) == 0 {
		t.Fatalf("kubeadm renders no %s", component)
	}
	return pod.Spec.Containers[0].Image
}

func imageTag(version string) string { return kubeadmImageTag(version) }

// nextPatch and nextMinor are the Kubernetes releases after v (v1.M.P).
func nextPatch(t *testing.T, v string) string {
	t.Helper()
	major, minor, patch := versionParts(t, v)
	return fmt.Sprintf("v%d.%d.%d", major, minor, patch+1)
}

func nextMinor(t *testing.T, v string) string {
	t.Helper()
	major, minor, _ := versionParts(t, v)
	return fmt.Sprintf("v%d.%d.0", major, minor+1)
}

func versionParts(t *testing.T, v string) (major, minor, patch int) {
	t.Helper()
	if _, err := fmt.Sscanf(v, "v%d.%d.%d", &major, &minor, &patch); err != nil {
		t.Fatalf("%q is not a version v1.M.P: %v", v, err)
	}
	return major, minor, patch
}
