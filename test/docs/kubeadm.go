package docs

import (
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The deploy kit's kubeadm files, and the guide that installs them: shared by the docs'
// runners on a simulated node (test/integration/docs) and on a real one (test/node).
const (
	Operating       = "docs/operating.md"
	StaticPodPatch  = "build/deploy/static-pod/kube-apiserver.yaml"
	KubeadmFragment = "build/deploy/static-pod/kubeadm-config.yaml"
	AdmissionConfig = "build/deploy/static-pod/admission-config.yaml"
)

// MergeClusterConfiguration does step 4's edit: kubeadm-config.yaml's apiServer.extraArgs and
// extraVolumes merged into the cluster's (our plugin names added to the cluster's own
// enable-admission-plugins; every other flag and volume added).
func MergeClusterConfiguration(t testing.TB, cluster, fragment []byte) []byte {
	t.Helper()
	var c, f map[string]any
	if err := yaml.Unmarshal(cluster, &c); err != nil {
		t.Fatalf("the ClusterConfiguration: %v", err)
	}
	if err := yaml.Unmarshal(fragment, &f); err != nil {
		t.Fatalf("%s: %v", KubeadmFragment, err)
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

// RemovePlugins does the rollback's edit: our plugin names taken out of the
// ClusterConfiguration's enable-admission-plugins (kubeadm's own NodeRestriction stays).
func RemovePlugins(t testing.TB, cluster []byte, ours []string) []byte {
	t.Helper()
	return editPlugins(t, cluster, func(names []string) []string {
		return slices.DeleteFunc(names, func(name string) bool { return name != "NodeRestriction" && slices.Contains(ours, name) })
	})
}

// AddPlugins adds names to the --enable-admission-plugins of a ClusterConfiguration that
// sets it (the kit's merged one): the edit of docs/operating.md's "3. Enabling plugins of
// ours" on a kubeadm node.
func AddPlugins(t testing.TB, cluster []byte, names ...string) []byte {
	t.Helper()
	return editPlugins(t, cluster, func(enabled []string) []string {
		for _, name := range names {
			if !slices.Contains(enabled, name) {
				enabled = append(enabled, name)
			}
		}
		return enabled
	})
}

// editPlugins rewrites the value of a ClusterConfiguration's enable-admission-plugins
// extraArgs entry with edit; a configuration without one is a test's mistake.
func editPlugins(t testing.TB, cluster []byte, edit func([]string) []string) []byte {
	t.Helper()
	var c map[string]any
	if err := yaml.Unmarshal(cluster, &c); err != nil {
		t.Fatal(err)
	}
	apiServer, _ := c["apiServer"].(map[string]any)
	args, _ := apiServer["extraArgs"].([]any)
	found := false
	for _, a := range args {
		arg := a.(map[string]any)
		if arg["name"] != "enable-admission-plugins" {
			continue
		}
		arg["value"] = strings.Join(edit(strings.Split(arg["value"].(string), ",")), ",")
		found = true
	}
	if !found {
		t.Fatalf("the ClusterConfiguration sets no enable-admission-plugins:\n%s", cluster)
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FragmentPlugins returns the plugin names kubeadm-config.yaml enables.
func FragmentPlugins(t testing.TB, fragment []byte) []string {
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
	t.Fatalf("%s enables no plugin", KubeadmFragment)
	return nil
}

// PatchImage is the image a kubeadm patch of the kit (StaticPodPatch, or a release's copy)
// sets.
func PatchImage(t testing.TB, patch string) string {
	t.Helper()
	var parsed struct {
		Spec struct {
			Containers []struct{ Name, Image string } `json:"containers"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(ReadFile(t, patch), &parsed); err != nil {
		t.Fatal(err)
	}
	if len(parsed.Spec.Containers) != 1 || parsed.Spec.Containers[0].Image == "" {
		t.Fatalf("%s sets no image", patch)
	}
	return parsed.Spec.Containers[0].Image
}

// ReadFile reads a file a test needs, failing the test when it cannot.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// RenderWithoutPreflight is what "4. Rolling back" runs of step 5's first block: the block
// without its last command, the preflight against the running manifest.
func RenderWithoutPreflight(t testing.TB) string {
	t.Helper()
	render := Block(t, Operating, KeyKubeadmRender)
	last := strings.LastIndex(render, "./kube-apiserver preflight")
	if last < 0 {
		t.Fatalf("step 5's first block has no preflight command last:\n%s", render)
	}
	return render[:last]
}
