// Package apiserver holds the integration suite for the command itself and for the
// admission chain: Portcullis's kube-apiserver binary against stock's, as real processes,
// with real etcd where storage is involved.
package apiserver

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/modulegraph"
	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// run executes binary with args and returns its combined output and exit code.
func run(t *testing.T, binary string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	// klog quotes the error it logs; unescape so tests match what an operator reads.
	text := strings.ReplaceAll(out.String(), `\"`, `"`)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return text, 0
	case errors.As(err, &exit):
		return text, exit.ExitCode()
	default:
		t.Fatalf("running %s: %v", binary, err)
		return "", -1
	}
}

func ourPluginNames() []string {
	var names []string
	for _, p := range portcullisadmission.Plugins() {
		names = append(names, p.Name)
	}
	return names
}

var flagName = regexp.MustCompile(`(?m)^\s+(?:-[a-zA-Z], )?(--[a-z0-9-]+)`)

func TestHelp(t *testing.T) {
	bins := framework.FindBinaries(t)
	ours, code := run(t, bins.APIServer, "--help")
	if code != 0 {
		t.Fatalf("--help exited %d:\n%s", code, ours)
	}
	stock, code := run(t, bins.StockAPIServer, "--help")
	if code != 0 {
		t.Fatalf("stock --help exited %d:\n%s", code, stock)
	}

	t.Run("lists our plugins among the admission plugins", func(t *testing.T) {
		for _, flag := range []string{"--enable-admission-plugins", "--disable-admission-plugins", "--admission-control"} {
			help := flagHelp(t, ours, flag)
			for _, name := range ourPluginNames() {
				if !strings.Contains(help, name) {
					t.Errorf("%s help does not list %s:\n%s", flag, name, help)
				}
			}
		}
	})

	t.Run("has every stock flag and no other", func(t *testing.T) {
		names := func(help string) []string {
			var out []string
			for _, m := range flagName.FindAllStringSubmatch(help, -1) {
				out = append(out, m[1])
			}
			slices.Sort(out)
			return out
		}
		if len(names(stock)) < 100 {
			t.Fatalf("found only %d flags in stock --help; the parser is broken", len(names(stock)))
		}
		if diff := cmp.Diff(names(stock), names(ours)); diff != "" {
			t.Errorf("flag names differ (-stock +ours):\n%s", diff)
		}
	})

	t.Run("reads exactly like stock apart from our plugin names", func(t *testing.T) {
		// Defaults, sections and descriptions must match to the byte once our names are
		// taken out of the plugin lists.
		// The one paragraph of ours: the pointer to preflight.
		normalized, hint, found := cutParagraph(ours, "Portcullis: before swapping this binary in")
		if !found || !strings.Contains(hint, `"kube-apiserver preflight --help"`) {
			t.Errorf("--help does not point to kube-apiserver preflight:\n%s", ours)
		}
		for _, name := range ourPluginNames() {
			normalized = strings.ReplaceAll(normalized, ", "+name, "")
		}
		if diff := cmp.Diff(strings.Split(stock, "\n"), strings.Split(normalized, "\n")); diff != "" {
			t.Errorf("--help differs from stock (-stock +ours):\n%s", diff)
		}
	})
}

// cutParagraph returns text without the paragraph (up to and with the blank line after it)
// that starts with prefix, and that paragraph.
func cutParagraph(text, prefix string) (rest, paragraph string, found bool) {
	start := strings.Index(text, prefix)
	if start < 0 {
		return text, "", false
	}
	end := strings.Index(text[start:], "\n\n")
	if end < 0 {
		return text[:start], text[start:], true
	}
	return text[:start] + text[start+end+2:], text[start : start+end], true
}

// flagHelp returns the help paragraph of one flag.
func flagHelp(t *testing.T, help, flag string) string {
	t.Helper()
	start := strings.Index(help, "      "+flag+" ")
	if start < 0 {
		t.Fatalf("--help has no %s", flag)
	}
	rest := help[start+len(flag)+6:]
	if end := flagName.FindStringIndex(rest); end != nil {
		rest = rest[:end[0]]
	}
	return rest
}

func TestVersion(t *testing.T) {
	bins := framework.FindBinaries(t)
	want := versionFile(t)
	out, code := run(t, bins.APIServer, "--version")
	if code != 0 {
		t.Fatalf("--version exited %d: %s", code, out)
	}
	if got := strings.TrimSpace(out); got != "Kubernetes "+want {
		t.Errorf("--version printed %q, want %q", got, "Kubernetes "+want)
	}
}

// TestBuiltWithThePGOProfile: the binary every suite starts is make build's, and make build
// compiles it with cmd/kube-apiserver/default.pgo (docs/pgo.md). The stock binary the suites
// compare against shares the profile (one compiled form of Kubernetes for make test) but is
// stock's main package from the same Kubernetes release (TestModuleGraphIsUpstreams holds the
// rest of its graph).
func TestBuiltWithThePGOProfile(t *testing.T) {
	bins := framework.FindBinaries(t)
	ours := readBuildInfo(t, bins.APIServer)
	if pgo := buildSetting(ours, "-pgo"); pgo != "default.pgo" {
		t.Errorf("%s: built with -pgo=%q, want %q", bins.APIServer, pgo, "default.pgo")
	}
	stock := readBuildInfo(t, bins.StockAPIServer)
	if stock.Path != "k8s.io/kubernetes/cmd/kube-apiserver" {
		t.Errorf("%s: main package %q, want stock's k8s.io/kubernetes/cmd/kube-apiserver", bins.StockAPIServer, stock.Path)
	}
	o, s := modulegraph.Linked(ours)["k8s.io/kubernetes"], modulegraph.Linked(stock)["k8s.io/kubernetes"]
	if o == "" || o != s {
		t.Errorf("k8s.io/kubernetes: ours links %q, stock %q; want one version", o, s)
	}
	if _, err := os.Stat(filepath.Join(framework.RepoRoot(t), "cmd", "kube-apiserver", "default.pgo")); err != nil {
		t.Errorf("the committed profile: %v", err)
	}
}

func versionFile(t *testing.T) string {
	t.Helper()
	version := framework.ReleaseVersion(t)
	if !regexp.MustCompile(`^v1\.\d+\.\d+\+portcullis\.\d+$`).MatchString(version) {
		t.Fatalf("VERSION %q is not v1.X.Y+portcullis.N", version)
	}
	return version
}

// fakeEtcd accepts TCP connections and counts them: a server that dials it has got past
// flag validation.
type fakeEtcd struct {
	url      string
	accepted atomic.Int32
}

func startFakeEtcd(t *testing.T) *fakeEtcd {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f := &fakeEtcd{url: "http://" + l.Addr().String()}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			f.accepted.Add(1)
			conn.Close()
		}
	}()
	return f
}

// serverArgs are valid flags for a server whose storage is the fake etcd.
func serverArgs(t *testing.T, etcdURL string, extra ...string) []string {
	dir := t.TempDir()
	args := controlplane.APIServerFlags(framework.WritePKI(t, dir), dir, etcdURL, framework.FreePort(t))
	return append(args, extra...)
}

func TestBadAdmissionFlagsFailBeforeEtcd(t *testing.T) {
	bins := framework.FindBinaries(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{
			name: "unknown plugin in --enable-admission-plugins",
			args: []string{"--enable-admission-plugins=NoSuchPlugin"},
			want: []string{`enable-admission-plugins plugin "NoSuchPlugin" is unknown`},
		},
		{
			name: "unknown plugin in --disable-admission-plugins",
			args: []string{"--disable-admission-plugins=NoSuchPlugin"},
			want: []string{`disable-admission-plugins plugin "NoSuchPlugin" is unknown`},
		},
		{
			name: "unknown plugin in the deprecated --admission-control",
			args: []string{"--admission-control=NoSuchPlugin"},
			want: []string{`admission-control plugin "NoSuchPlugin" is unknown`},
		},
		{
			name: "a plugin both enabled and disabled",
			args: []string{"--enable-admission-plugins=SecurityContextDeny", "--disable-admission-plugins=SecurityContextDeny"},
			want: []string{"SecurityContextDeny", "overlapped"},
		},
		{
			name: "an enforcement mode for a plugin that keeps the server safe",
			args: []string{"--admission-control-config-file=" + enforcementConfig(t, "NamespaceLifecycle", "Warn")},
			want: []string{"NamespaceLifecycle", "admission-config.yaml"},
		},
		{
			name: "a served API that is not ours",
			args: []string{"--admission-control-config-file=" + portcullisConfig(t, "servedAPIs: [policy/v1beta2]")},
			want: []string{"admission-config.yaml", "plugins[0] (Portcullis)", "configuration.servedAPIs[0]", "policy/v1beta2"},
		},
		{
			name: "a dispatch setting out of range",
			args: []string{"--admission-control-config-file=" + portcullisConfig(t, "webhookDispatch:\n  validating:\n    circuitBreaker: {failureThreshold: 0}")},
			want: []string{"configuration.webhookDispatch.validating.circuitBreaker.failureThreshold"},
		},
		{
			name: "a webhook enforcement mode naming no webhook, and a validating idempotency probe",
			args: []string{"--admission-control-config-file=" + portcullisConfig(t, "webhookDispatch:\n  validating:\n    enforcementModes:\n    - {configuration: policy, modes: [Warn]}\n    idempotencyProbe: {oneIn: 10}")},
			want: []string{"configuration.webhookDispatch.validating.enforcementModes[0].webhook: Required value", "configuration.webhookDispatch.validating.idempotencyProbe"},
		},
		{
			name: "an admission trace with nothing on",
			args: []string{"--admission-control-config-file=" + portcullisConfig(t, "admissionTrace: {}")},
			want: []string{"configuration.admissionTrace", "set onRequest and/or audit"},
		},
		{
			name: "a plugin configuration with a misspelt field",
			args: []string{"--enable-admission-plugins=InitialResources",
				"--admission-control-config-file=" + initialResourcesConfig(t, "http://127.0.0.1:9090", "    percentil: 90\n")},
			want: []string{"InitialResources", `unknown field "percentil"`},
		},
		{
			name: "a PersistentVolumeLabel rule whose expression does not compile",
			args: []string{"--enable-admission-plugins=PersistentVolumeLabel",
				"--admission-control-config-file=" + persistentVolumeLabelConfig(t, "    rules:\n    - source: CSI\n      match: '(['\n      zone: z\n")},
			want: []string{"PersistentVolumeLabel", "rules[0].match", "missing closing ]"},
		},
		{
			name: "an enforcement mode that is not one",
			args: []string{"--enable-admission-plugins=SecurityContextDeny", "--admission-control-config-file=" + enforcementConfig(t, "SecurityContextDeny", "Maybe")},
			want: []string{"modes", "Maybe"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			etcd := startFakeEtcd(t)
			out, code := run(t, bins.APIServer, serverArgs(t, etcd.url, tc.args...)...)
			if code == 0 {
				t.Fatalf("exited 0, want an error:\n%s", out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("output does not say %q:\n%s", want, tail(out))
				}
			}
			if n := etcd.accepted.Load(); n != 0 {
				t.Errorf("the server dialled etcd %d times before failing on its flags", n)
			}
		})
	}

	// The control: the same flags with a valid plugin get as far as dialling etcd, so the
	// "no connection" assertions above can fail.
	t.Run("control: valid flags reach etcd", func(t *testing.T) {
		etcd := startFakeEtcd(t)
		cmd := exec.Command(bins.APIServer, serverArgs(t, etcd.url, "--enable-admission-plugins=SecurityContextDeny")...)
		// exec's copying goroutine writes the running server's output while this goroutine may
		// read it (the failure message), so the buffer takes a lock.
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		deadline := time.Now().Add(2 * time.Minute)
		for etcd.accepted.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the server never dialled etcd:\n%s", tail(out.String()))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// lockedBuffer is an output buffer that a running process's output can be copied into while
// the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// portcullisConfig writes an admission configuration whose Portcullis entry holds body (the
// PortcullisConfiguration's fields, unindented).
func portcullisConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admission-config.yaml")
	config := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: Portcullis\n  configuration:\n" +
		"    apiVersion: admission.portcullis.io/v1alpha1\n    kind: PortcullisConfiguration\n    " + strings.ReplaceAll(body, "\n", "\n    ") + "\n"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// enforcementConfig writes an admission configuration giving plugin the enforcement mode.
func enforcementConfig(t *testing.T, plugin, mode string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admission-config.yaml")
	config := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: Portcullis\n  configuration:\n" +
		"    apiVersion: admission.portcullis.io/v1alpha1\n    kind: PortcullisConfiguration\n    enforcementModes:\n    - name: " + plugin + "\n      modes: [" + mode + "]\n"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
