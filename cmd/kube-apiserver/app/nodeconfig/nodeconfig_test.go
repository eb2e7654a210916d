package nodeconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadStaticPod(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, manifest string
		want           []string
		wantImage      string
		wantErr        string
	}{
		{
			name: "kubeadm's layout: command holds program and flags",
			manifest: `apiVersion: v1
kind: Pod
metadata: {name: kube-apiserver, namespace: kube-system}
spec:
  containers:
  - name: kube-apiserver
    image: registry.k8s.io/kube-apiserver:v1.37.2
    command: [kube-apiserver, --secure-port=6443, --tls-cert-file=/etc/kubernetes/pki/apiserver.crt]
`,
			want:      []string{"--secure-port=6443", "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt"},
			wantImage: "registry.k8s.io/kube-apiserver:v1.37.2",
		},
		{
			name: "args follow command; a sidecar is ignored",
			manifest: `apiVersion: v1
kind: Pod
metadata: {name: kube-apiserver}
spec:
  containers:
  - name: proxy
    command: [envoy]
  - name: apiserver
    command: [/usr/local/bin/kube-apiserver]
    args: [--v=2]
`,
			want: []string{"--v=2"},
		},
		{name: "not YAML", manifest: "{{{", wantErr: "not a Pod manifest"},
		{name: "no apiserver", manifest: "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: x\n    command: [sleep]\n", wantErr: "no container runs kube-apiserver"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, dir, strings.Repeat("m", i+1)+".yaml", tc.manifest)
			pod, err := ReadStaticPod(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("want an error naming %s and saying %q, got %v", path, tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pod.Args); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if pod.Image != tc.wantImage {
				t.Errorf("image %q, want %q", pod.Image, tc.wantImage)
			}
		})
	}
	if _, err := ReadStaticPod(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing manifest: %v", err)
	}
}

func TestReadSystemdUnit(t *testing.T) {
	dir := t.TempDir()
	env := writeFile(t, dir, "kube-apiserver.env", `# paths an operator edits
KUBE_APISERVER=/usr/local/bin/kube-apiserver
ETCD_SERVERS="https://10.0.0.1:2379,https://10.0.0.2:2379"
EXTRA_ARGS=--v=2 --profiling=false
`)
	other := writeFile(t, dir, "other.env", "KUBE_APISERVER=/opt/kube-apiserver\nETCD_SERVERS=https://e:2379\nEXTRA_ARGS=\n")
	unit := writeFile(t, dir, "kube-apiserver.service", `[Unit]
Description=Kubernetes API server
ExecStart=/not/this/section

[Service]
Type=simple
Environment="CERT_DIR=/etc/kubernetes/pki" SECURE_PORT=6443
EnvironmentFile=`+env+`
ExecStart=${KUBE_APISERVER} \
  --etcd-servers=${ETCD_SERVERS} \
  --secure-port=${SECURE_PORT} \
  --tls-cert-file=${CERT_DIR}/apiserver.crt \
  $EXTRA_ARGS
Restart=on-failure
`)
	got, err := readArgs(unit, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379", "--secure-port=6443", "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt", "--v=2", "--profiling=false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	got, err = readArgs(unit, other)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"--etcd-servers=https://e:2379", "--secure-port=6443", "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("with --environment-file (-want +got):\n%s", diff)
	}

	wrapped := writeFile(t, dir, "wrapped.service", "[Service]\nEnvironmentFile="+env+"\nExecStart=/usr/bin/env GODEBUG=x509sha1=0 ${KUBE_APISERVER} --v=3\n")
	if got, err := readArgs(wrapped, ""); err != nil || !cmp.Equal(got, []string{"--v=3"}) {
		t.Errorf("a binary started through env: %v %v", got, err)
	}

	noExec := writeFile(t, dir, "none.service", "[Service]\nType=simple\n")
	if _, err := readArgs(noExec, ""); err == nil || !strings.Contains(err.Error(), "ExecStart") {
		t.Errorf("a unit without ExecStart: %v", err)
	}
	missingEnv := writeFile(t, dir, "missing-env.service", "[Service]\nEnvironmentFile="+filepath.Join(dir, "nope.env")+"\nExecStart=/bin/kube-apiserver\n")
	if _, err := readArgs(missingEnv, ""); err == nil || !strings.Contains(err.Error(), "nope.env") {
		t.Errorf("a missing EnvironmentFile: %v", err)
	}
	optionalEnv := writeFile(t, dir, "optional-env.service", "[Service]\nEnvironmentFile=-"+filepath.Join(dir, "nope.env")+"\nExecStart=/bin/kube-apiserver --v=1\n")
	if got, err := readArgs(optionalEnv, ""); err != nil || len(got) != 1 {
		t.Errorf("an optional missing EnvironmentFile: %v %v", got, err)
	}
}

// TestReadSystemdUnitDropIns checks that what preflight checks is the ExecStart
// systemd would run: after the drop-ins beside the unit and under the system directory, in
// file-name order, with an empty ExecStart= resetting the list.
func TestReadSystemdUnitDropIns(t *testing.T) {
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")

	unitDir := filepath.Join(dir, "lib")
	unit := filepath.Join(unitDir, "kube-apiserver.service")
	besideDir, etcDir := unit+".d", filepath.Join(etc, "kube-apiserver.service.d")
	for _, d := range []string{besideDir, etcDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, unitDir, "kube-apiserver.service", "[Service]\nEnvironment=V=1\nExecStart=/usr/bin/kube-apiserver --v=${V} --secure-port=6443\n")

	tests := []struct {
		name    string
		dropIns map[string]string // path relative to dir: content
		want    []string
		wantErr string
	}{
		{
			name: "no drop-in",
			want: []string{"--v=1", "--secure-port=6443"},
		},
		{
			name: "a drop-in beside the unit resets and replaces ExecStart",
			dropIns: map[string]string{
				"lib/kube-apiserver.service.d/10-flags.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/kube-apiserver --v=${V} --etcd-servers=https://10.0.0.1:2379\n",
			},
			want: []string{"--v=1", "--etcd-servers=https://10.0.0.1:2379"},
		},
		{
			name: "drop-ins apply in file-name order across directories",
			dropIns: map[string]string{
				"etc/kube-apiserver.service.d/20-env.conf":       "[Service]\nEnvironment=V=3\n",
				"lib/kube-apiserver.service.d/10-env.conf":       "[Service]\nEnvironment=V=2\n",
				"lib/kube-apiserver.service.d/ignored.txt":       "[Service]\nEnvironment=V=9\n",
				"etc/kube-apiserver.service.d/30-exec.conf":      "[Service]\nExecStart=\nExecStart=/opt/bin/kube-apiserver --v=${V}\n",
				"lib/kube-apiserver.service.d/99-unrelated.conf": "[Unit]\nDescription=x\n",
			},
			want: []string{"--v=3"},
		},
		{
			name: "the system directory hides a drop-in of the same name",
			dropIns: map[string]string{
				"lib/kube-apiserver.service.d/10-exec.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/kube-apiserver --v=7\n",
				"etc/kube-apiserver.service.d/10-exec.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/kube-apiserver --v=8\n",
			},
			want: []string{"--v=8"},
		},
		{
			name: "a second ExecStart without a reset is refused, as systemd refuses it",
			dropIns: map[string]string{
				"etc/kube-apiserver.service.d/10-exec.conf": "[Service]\nExecStart=/usr/bin/kube-apiserver --v=8\n",
			},
			wantErr: "found 2",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, d := range []string{besideDir, etcDir} {
				entries, _ := os.ReadDir(d)
				for _, e := range entries {
					os.Remove(filepath.Join(d, e.Name()))
				}
			}
			for path, content := range tc.dropIns {
				writeFile(t, dir, path, content)
			}
			service, err := readSystemdUnit(unit, []string{""}, []string{etc})
			var got []string
			if service != nil {
				got = service.Args
			}
			checkCommandLine(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestReadSystemdUnitPrefixes checks ExecStart's prefixes as systemd.service(5)
// defines them.
func TestReadSystemdUnitPrefixes(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		execStart string
		want      []string
		wantErr   string
	}{
		{execStart: "-/usr/bin/kube-apiserver --v=${V}", want: []string{"--v=2"}},
		{execStart: "+/usr/bin/kube-apiserver --v=2", want: []string{"--v=2"}},
		{execStart: "!!/usr/bin/kube-apiserver --v=2", want: []string{"--v=2"}},
		// "@": the second word is argv[0], not an argument.
		{execStart: "@/usr/bin/kube-apiserver kube-apiserver --v=2", want: []string{"--v=2"}},
		{execStart: "-@/usr/bin/kube-apiserver apiserver --v=${V}", want: []string{"--v=2"}},
		{execStart: "@/usr/bin/env env /usr/bin/kube-apiserver --v=2", want: []string{"--v=2"}},
		// ":": no variable substitution.
		{execStart: ":/usr/bin/kube-apiserver --v=2 --token-auth-file=/etc/$FILE", want: []string{"--v=2", "--token-auth-file=/etc/$FILE"}},
		{execStart: "-:${BINARY} --v=2", wantErr: "not kube-apiserver"},
		{execStart: "@/usr/bin/python3 kube-apiserver --v=2", wantErr: "not kube-apiserver"},
	}
	for i, tc := range tests {
		t.Run(tc.execStart, func(t *testing.T) {
			unit := writeFile(t, dir, fmt.Sprintf("u%d.service", i), "[Service]\nEnvironment=V=2 BINARY=/usr/bin/kube-apiserver FILE=tokens.csv\nExecStart="+tc.execStart+"\n")
			got, err := readArgs(unit, "")
			checkCommandLine(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// checkCommandLine holds a command line read from a unit to want, or its error to wantErr.
func checkCommandLine(t *testing.T, got []string, err error, want []string, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("want an error saying %q, got %v (%q)", wantErr, err, got)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// readArgs reads a unit's command line, with no drop-in directory beside its own.
func readArgs(unit, environmentFile string) ([]string, error) {
	service, err := readSystemdUnit(unit, []string{environmentFile}, nil)
	if err != nil {
		return nil, err
	}
	return service.Args, nil
}

// TestReadSystemdUnitEnvironmentFiles: several environment files given in place of the
// unit's are all read, in order, as systemd reads a unit's several EnvironmentFile= lines
// (packaged units split /etc/kubernetes/config and /etc/kubernetes/apiserver).
func TestReadSystemdUnitEnvironmentFiles(t *testing.T) {
	dir := t.TempDir()
	unit := filepath.Join(dir, "kube-apiserver.service")
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(unit, "[Service]\nEnvironmentFile=/nonexistent/config\nEnvironmentFile=/nonexistent/apiserver\nExecStart=/usr/local/bin/kube-apiserver $KUBE_LOGGING $KUBE_API_ARGS\n")
	config, apiserver := filepath.Join(dir, "config"), filepath.Join(dir, "apiserver")
	write(config, "KUBE_LOGGING=--v=2\nKUBE_API_ARGS=--secure-port=1\n")
	write(apiserver, "KUBE_API_ARGS=--secure-port=6443 --service-node-port-range=20000-22767\n")
	service, err := readSystemdUnit(unit, []string{config, apiserver}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"--v=2", "--secure-port=6443", "--service-node-port-range=20000-22767"}; !slices.Equal(service.Args, want) {
		t.Errorf("args %q, want %q (both files, the later one's value)", service.Args, want)
	}
}
