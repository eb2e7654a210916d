package release

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	kubeadmscheme "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme"
	kubeadmapiv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/images"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"

	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

const (
	staticPodPatch       = "build/deploy/static-pod/kube-apiserver.yaml"
	staticPodAdmission   = "build/deploy/static-pod/admission-config.yaml"
	systemdUnit          = "build/deploy/systemd/kube-apiserver.service"
	systemdEnvironment   = "build/deploy/systemd/kube-apiserver.env"
	kubeadmDefaultPlugin = "NodeRestriction"
	// imageRepository is where docs/release.md loads the image when it is imported on a
	// node rather than pushed to a registry.
	imageRepository = "localhost/portcullis"
)

// kubeadmImageTag is the tag kubeadm gives the images of a Kubernetes version, from kubeadm's
// own function: the tag the release's image must carry (build/image derives it; this is what
// it is held to).
func kubeadmImageTag(version string) string {
	return kubeadmutil.KubernetesVersionToImageTag(version)
}

// kubeadmAPIServerImage is the kube-apiserver image `kubeadm config images list
// --kubernetes-version <version> --image-repository <repository>` prints, by the command's own
// path: the flags set a defaulted v1beta4 ClusterConfiguration, which kubeadm loads, defaults
// and normalizes (NewImagesList), then lists the control plane's images of (ImagesList.Run).
func kubeadmAPIServerImage(t *testing.T, version, repository string) string {
	t.Helper()
	flags := &kubeadmapiv1.ClusterConfiguration{}
	kubeadmscheme.Scheme.Default(flags)
	flags.KubernetesVersion = version
	flags.ImageRepository = repository
	cfg, err := configutil.LoadOrDefaultInitConfiguration("", &kubeadmapiv1.InitConfiguration{}, flags,
		configutil.LoadOrDefaultConfigurationOptions{SkipCRIDetect: true})
	if err != nil {
		t.Fatalf("kubeadm config images list --kubernetes-version %s --image-repository %s: %v", version, repository, err)
	}
	listed := images.GetControlPlaneImages(&cfg.ClusterConfiguration)
	prefix := repository + "/" + kubeadmconstants.KubeAPIServer + ":"
	var apiServer []string
	for _, image := range listed {
		if strings.HasPrefix(image, prefix) {
			apiServer = append(apiServer, image)
		}
	}
	if len(apiServer) != 1 {
		t.Fatalf("kubeadm config images list --kubernetes-version %s --image-repository %s lists %q, want one %s… image", version, repository, listed, prefix)
	}
	return apiServer[0]
}

// wantPlugins are the admission plugins both deployments enable: kubeadm's default and ours,
// but for those that need setup first (Plugin.Prerequisite), which they name in a comment.
func wantPlugins() []string {
	names := []string{kubeadmDefaultPlugin}
	for _, p := range portcullisadmission.Plugins() {
		if p.Prerequisite == "" {
			names = append(names, p.Name)
		}
	}
	return names
}

// checkPrerequisitesNamed fails unless the deployment file names every plugin of ours that
// needs setup first, without enabling it.
func checkPrerequisitesNamed(t *testing.T, file string, enabled []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), file))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range portcullisadmission.Plugins() {
		if p.Prerequisite == "" {
			continue
		}
		if slices.Contains(enabled, p.Name) {
			t.Errorf("%s enables %s, which needs setup first: %s", file, p.Name, p.Prerequisite)
		}
		if !strings.Contains(string(data), p.Name) {
			t.Errorf("%s does not tell the operator about %s (%s)", file, p.Name, p.Prerequisite)
		}
	}
}

// parseAPIServerFlags parses args with kube-apiserver v1.37.2's own flag set, as the server
// would, and returns the admission plugins they enable and the admission config file.
func parseAPIServerFlags(t *testing.T, args []string) (enabled []string, configFile string) {
	t.Helper()
	opts := apiserveroptions.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	for _, named := range opts.Flags().FlagSets {
		fs.AddFlagSet(named)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("kube-apiserver would reject its flags: %v\nflags: %q", err, args)
	}
	if fs.NArg() != 0 {
		t.Fatalf("kube-apiserver would be left with arguments that are not flags: %q", fs.Args())
	}
	return opts.Admission.GenericAdmission.EnablePlugins, opts.Admission.GenericAdmission.ConfigFile
}

// checkEnabled fails unless enabled holds every plugin of wantPlugins.
func checkEnabled(t *testing.T, where string, enabled []string) {
	t.Helper()
	for _, name := range wantPlugins() {
		if !slices.Contains(enabled, name) {
			t.Errorf("%s: --enable-admission-plugins comes to %q, which lacks %s", where, enabled, name)
		}
	}
}

// TestReleaseBinaryKnowsThePlugins holds the deployments' plugin names to the release binary's
// own list, from its --help.
func TestReleaseBinaryKnowsThePlugins(t *testing.T) {
	r := loadRelease(t)
	path := r.binary(hostPlatform(t))
	out, err := exec.Command(path, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", path, err, out)
	}
	help := regexp.MustCompile(`\s+`).ReplaceAllString(string(out), " ")
	_, list, ok := strings.Cut(help, "--enable-admission-plugins strings")
	if !ok {
		t.Fatalf("%s --help does not describe --enable-admission-plugins", path)
	}
	_, list, ok = strings.Cut(list, "Comma-delimited list of admission plugins: ")
	if !ok {
		t.Fatalf("%s --help does not list the admission plugins", path)
	}
	list, _, _ = strings.Cut(list, ".")
	known := strings.Split(list, ", ")
	for _, name := range wantPlugins() {
		if !slices.Contains(known, name) {
			t.Errorf("%s does not know the admission plugin %s; it knows %q", path, name, known)
		}
	}
}

func apiServerContainer(t *testing.T, pod corev1.Pod) corev1.Container {
	t.Helper()
	for _, c := range pod.Spec.Containers {
		if c.Name == "kube-apiserver" {
			return c
		}
	}
	t.Fatalf("pod %s has no container kube-apiserver", pod.Name)
	return corev1.Container{}
}

// TestAdmissionConfig reads the example admission configuration the way kube-apiserver does.
func TestAdmissionConfig(t *testing.T) {
	path := repoFile(t, staticPodAdmission)
	scheme := runtime.NewScheme()
	apiserverinstall.Install(scheme)
	provider, err := admission.ReadAdmissionConfiguration(wantPlugins(), path, scheme)
	if err != nil {
		t.Fatalf("kube-apiserver would reject %s: %v", staticPodAdmission, err)
	}
	// A plugin of ours that takes configuration must be configured in the example.
	for _, p := range portcullisadmission.Plugins() {
		cfg, err := provider.ConfigFor(p.Name)
		if err != nil {
			t.Errorf("%s: configuration for %s: %v", staticPodAdmission, p.Name, err)
		}
		if (p.ExampleConfig != "") != (cfg != nil) {
			t.Errorf("%s: %s takes configuration: %t; the file configures it: %t", staticPodAdmission, p.Name, p.ExampleConfig != "", cfg != nil)
		}
	}

	// Day one changes no verdict: every plugin of ours that refuses ordinary workloads is in
	// Warn+Audit, and no other plugin has a mode (the guard has its checks' own levels).
	portcullis, err := portcullisconfig.Load(path)
	if err != nil {
		t.Fatalf("Portcullis would reject %s: %v", staticPodAdmission, err)
	}
	got := map[string]string{}
	for _, m := range portcullis.EnforcementModes {
		var modes []string
		for _, mode := range m.Modes {
			modes = append(modes, string(mode))
		}
		got[m.Name] = strings.Join(modes, "+")
	}
	want := map[string]string{}
	for _, p := range portcullisadmission.Plugins() {
		if p.RefusesWorkloads {
			want[p.Name] = strings.Join(portcullisadmission.DayOneModes, "+")
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s sets the enforcement modes %v, want %v: on day one the plugins that refuse ordinary workloads warn and audit", staticPodAdmission, got, want)
	}
}

// TestSystemdUnitVerifies runs systemd's own checks on the unit. The program systemd starts is
// /usr/bin/env (systemd expands no variables in the program's path), so that is the path
// `systemd-analyze verify` finds; TestSystemdUnitSettings checks what the unit passes to it.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := lookTool(t, "systemd-analyze", "systemd")
	path := repoFile(t, systemdUnit)
	out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
	// verify reports unknown or malformed settings as warnings and still exits 0.
	if err != nil {
		t.Fatalf("systemd-analyze verify %s: %v\n%s", systemdUnit, err, out)
	}
	if len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("systemd-analyze verify %s warns:\n%s", systemdUnit, out)
	}
}

// unit is a systemd unit file's settings, by section and key.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section := ""
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			key, value, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: line %d: %q is not key=value in a section", path, n+1, line)
			}
			u[section][key] = append(u[section][key], value)
		}
	}
	return u
}

func (u unit) one(t *testing.T, section, key string) string {
	t.Helper()
	values := u[section][key]
	if len(values) != 1 {
		t.Fatalf("%s: [%s] %s= is set %d times, want once", systemdUnit, section, key, len(values))
	}
	return values[0]
}

// parseEnvironmentFile reads KEY=VALUE lines; the example uses no quoting.
func parseEnvironmentFile(t *testing.T, path string) (map[string]string, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	var order []string
	scanner := bufio.NewScanner(f)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || !regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(key) || strings.ContainsAny(value, `"'\`) {
			t.Fatalf("%s:%d: %q is not an unquoted KEY=value line", path, n, line)
		}
		if _, dup := env[key]; dup {
			t.Fatalf("%s:%d: %s is set twice", path, n, key)
		}
		env[key] = value
		order = append(order, key)
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return env, order
}

var unitVariable = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}|\$([A-Za-z0-9_]+)`)

// expandExecStart expands a command line the way systemd does: "${VAR}" inside a word is
// replaced by the value, and the word stays one argument; "$VAR" as a word of its own becomes
// the value split at whitespace. It also returns the variables used.
func expandExecStart(t *testing.T, words []string, env map[string]string) (args, used []string) {
	t.Helper()
	for _, word := range words {
		if m := regexp.MustCompile(`^\$([A-Za-z0-9_]+)$`).FindStringSubmatch(word); m != nil {
			value, ok := env[m[1]]
			if !ok {
				t.Fatalf("%s uses $%s, which %s does not set", systemdUnit, m[1], systemdEnvironment)
			}
			used = append(used, m[1])
			args = append(args, strings.Fields(value)...)
			continue
		}
		args = append(args, unitVariable.ReplaceAllStringFunc(word, func(v string) string {
			name := strings.Trim(v, "${}")
			value, ok := env[name]
			if !ok {
				t.Fatalf("%s uses %s, which %s does not set", systemdUnit, v, systemdEnvironment)
			}
			used = append(used, name)
			return value
		}))
	}
	return args, used
}

func TestSystemdUnitSettings(t *testing.T) {
	u := parseUnit(t, repoFile(t, systemdUnit))
	env, envOrder := parseEnvironmentFile(t, repoFile(t, systemdEnvironment))

	if got := u.one(t, "Service", "EnvironmentFile"); got != "/etc/kubernetes/kube-apiserver.env" {
		t.Errorf("EnvironmentFile=%s, want /etc/kubernetes/kube-apiserver.env (where the env file's comment says to install it)", got)
	}
	for key, want := range map[string]string{"NoNewPrivileges": "yes", "Restart": "on-failure", "LimitNOFILE": "1048576", "ProtectSystem": "strict", "ProtectHome": "yes"} {
		if got := u.one(t, "Service", key); got != want {
			t.Errorf("%s=%s, want %s", key, got, want)
		}
	}

	// Type=notify only while the API server really sends READY=1.
	if got, want := u.one(t, "Service", "Type"), notifyTypeFromSource(t); got != want {
		t.Errorf("Type=%s, but k8s.io/apiserver's source calls for Type=%s", got, want)
	}

	words := strings.Fields(u.one(t, "Service", "ExecStart"))
	if len(words) < 2 || words[0] != "/usr/bin/env" || words[1] != "${KUBE_APISERVER_BINARY}" {
		t.Fatalf("ExecStart starts %q, want /usr/bin/env ${KUBE_APISERVER_BINARY}", words[:min(2, len(words))])
	}
	// A directory of the release's own: installing never overwrites the stock binary (kept at
	// /usr/local/bin/kube-apiserver for a rollback) or an earlier release.
	if want := "/usr/local/lib/portcullis/" + readVersion(t) + "/kube-apiserver"; env["KUBE_APISERVER_BINARY"] != want {
		t.Errorf("KUBE_APISERVER_BINARY=%s, want %s", env["KUBE_APISERVER_BINARY"], want)
	}
	// Every flag's value is in the environment file: the unit hard-codes none.
	for _, word := range words[2:] {
		if strings.HasPrefix(word, "--") && !unitVariable.MatchString(word) {
			t.Errorf("ExecStart hard-codes %s; give it a setting in %s", word, systemdEnvironment)
		}
	}
	// A setting named FOO_BAR feeds --foo-bar, so the env file reads as the flags it sets.
	for _, word := range words[2:] {
		flag, value, ok := strings.Cut(word, "=")
		if m := unitVariable.FindStringSubmatch(value); ok && m != nil {
			if want := "--" + strings.ToLower(strings.ReplaceAll(m[1], "_", "-")); flag != want {
				t.Errorf("ExecStart passes %s as %s; name the setting after its flag (%s)", m[0], flag, want)
			}
		}
	}

	args, used := expandExecStart(t, words, env)
	for _, key := range envOrder {
		if !slices.Contains(used, key) {
			t.Errorf("%s sets %s, which %s never uses", systemdEnvironment, key, systemdUnit)
		}
	}
	enabled, configFile := parseAPIServerFlags(t, args[2:])
	checkEnabled(t, systemdUnit, enabled)
	checkPrerequisitesNamed(t, systemdEnvironment, enabled)
	if configFile != env["ADMISSION_CONTROL_CONFIG_FILE"] || configFile == "" {
		t.Errorf("--admission-control-config-file=%q, want ADMISSION_CONTROL_CONFIG_FILE's %q", configFile, env["ADMISSION_CONTROL_CONFIG_FILE"])
	}
}

// notifyTypeFromSource is the service type kube-apiserver v1.37.2's source calls for: notify
// when the generic API server sends READY=1 through sd_notify, simple otherwise.
func notifyTypeFromSource(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/apiserver").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/apiserver: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "pkg", "server", "genericapiserver.go")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the API server's source: %v", err)
	}
	if regexp.MustCompile(`SdNotify\([^)]*"READY=1`).Match(src) {
		return "notify"
	}
	return fmt.Sprintf("simple (no SdNotify READY=1 in %s)", path)
}

// deployKit lists the deploy kit's files, relative to build/deploy: every tracked file there
// but the Go package that embeds the PodSecurityPolicy examples.
func deployKit(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "--", "build/deploy")
	cmd.Dir = framework.RepoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files build/deploy: %v", err)
	}
	var files []string
	for _, path := range strings.Fields(string(out)) {
		if !strings.HasSuffix(path, ".go") {
			files = append(files, strings.TrimPrefix(path, "build/deploy/"))
		}
	}
	if len(files) == 0 {
		t.Fatal("build/deploy holds no tracked file")
	}
	return files
}

// TestReleaseCarriesTheDeployKit: the release holds the deploy kit under deploy/, naming
// itself. build/deploy names the newest minor's release (its image tag, install path,
// Kubernetes and staging versions); the release's copy is the same with this release's, so an
// older minor's operator installs it as it is.
func TestReleaseCarriesTheDeployKit(t *testing.T) {
	r := loadRelease(t)
	root := framework.RepoRoot(t)
	newest, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	kitVersion := strings.TrimSpace(string(newest))
	kube := func(version string) string { return version[:strings.Index(version, "+")] }
	staging := func(version string) string { return "v0" + strings.TrimPrefix(kube(version), "v1") }
	// At each position the first listed match wins: the release before its Kubernetes version.
	rename := strings.NewReplacer(kitVersion, r.version, kubeadmImageTag(kitVersion), r.tag,
		kube(kitVersion), kube(r.version), staging(kitVersion), staging(r.version))
	for _, file := range deployKit(t) {
		shipped, err := os.ReadFile(filepath.Join(root, "build", "deploy", file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(r.dir, "deploy", file))
		if err != nil {
			t.Errorf("the release lacks the deploy kit's %s: %v", file, err)
			continue
		}
		if want := rename.Replace(string(shipped)); string(got) != want {
			t.Errorf("%s/deploy/%s is not build/deploy/%s naming %s:\n%s", r.dir, file, file, r.version, got)
		}
	}
	// An older minor's kit names nothing of the newest minor's.
	newestMinor := regexp.MustCompile(`^v1\.([0-9]+)\.`).FindStringSubmatch(kitVersion)[1]
	if !strings.HasPrefix(r.version, "v1."+newestMinor+".") {
		leftover := regexp.MustCompile(`v[01]\.` + newestMinor + `\.[0-9]`)
		for _, file := range deployKit(t) {
			got, _ := os.ReadFile(filepath.Join(r.dir, "deploy", file))
			if found := leftover.FindAllString(string(got), -1); len(found) > 0 {
				t.Errorf("%s/deploy/%s, of %s, still names %q", r.dir, file, r.version, found)
			}
		}
	}
	patch, err := os.ReadFile(filepath.Join(r.dir, "deploy", "static-pod", "kube-apiserver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(patch), "/kube-apiserver:"+r.tag+"\n") {
		t.Errorf("the release's static pod patch does not run the image tagged %s:\n%s", r.tag, patch)
	}
	env, err := os.ReadFile(filepath.Join(r.dir, "deploy", "systemd", "kube-apiserver.env"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "\nKUBE_APISERVER_BINARY=/usr/local/lib/portcullis/"+r.version+"/kube-apiserver\n") {
		t.Errorf("the release's systemd settings do not start the binary installed for %s:\n%s", r.version, env)
	}
}
