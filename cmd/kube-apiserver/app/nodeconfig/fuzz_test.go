package nodeconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The seed corpora below are the inputs of nodeconfig_test.go; crashers Go finds are kept
// under testdata/fuzz/<target>.

// FuzzReadStaticPod reads a static pod manifest as `preflight --manifest` does.
func FuzzReadStaticPod(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: kube-apiserver, namespace: kube-system}\nspec:\n  containers:\n  - name: kube-apiserver\n    image: registry.k8s.io/kube-apiserver:v1.37.2\n    command: [kube-apiserver, --secure-port=6443, --tls-cert-file=/etc/kubernetes/pki/apiserver.crt]\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: kube-apiserver}\nspec:\n  containers:\n  - name: proxy\n    command: [envoy]\n  - name: apiserver\n    command: [/usr/local/bin/kube-apiserver]\n    args: [--v=2]\n",
		"{{{",
		"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: x\n    command: [sleep]\n",
		"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: kube-apiserver\n    command: [/bin/sh, -c, kube-apiserver]\n",
	} {
		f.Add([]byte(seed))
	}
	path := filepath.Join(f.TempDir(), "kube-apiserver.yaml")
	f.Fuzz(func(t *testing.T, manifest []byte) {
		if err := os.WriteFile(path, manifest, 0o600); err != nil {
			t.Fatal(err)
		}
		pod, err := ReadStaticPod(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Errorf("the error does not name the file: %v", err)
			}
			return
		}
		again, err := ReadStaticPod(path)
		if err != nil || !reflect.DeepEqual(pod, again) {
			t.Errorf("not deterministic: %+v, then %+v (%v)", pod, again, err)
		}
	})
}

// FuzzReadSystemdUnit reads a systemd unit and an environment file as
// `preflight --systemd-unit --environment-file` does: the unit's [Service] section, line
// continuations, Environment=, quoting, ${VAR} and $VAR expansion, ExecStart prefixes and an
// env(1) wrapper. The environment file is always given, so the unit's own EnvironmentFile=
// lines (which may name any file) are not read.
func FuzzReadSystemdUnit(f *testing.F) {
	const env = "# paths an operator edits\nKUBE_APISERVER=/usr/local/bin/kube-apiserver\nETCD_SERVERS=\"https://10.0.0.1:2379,https://10.0.0.2:2379\"\nEXTRA_ARGS=--v=2 --profiling=false\n"
	for _, seed := range []struct{ unit, env string }{
		{"[Unit]\nDescription=Kubernetes API server\nExecStart=/not/this/section\n\n[Service]\nType=simple\nEnvironment=\"CERT_DIR=/etc/kubernetes/pki\" SECURE_PORT=6443\nExecStart=${KUBE_APISERVER} \\\n  --etcd-servers=${ETCD_SERVERS} \\\n  --secure-port=${SECURE_PORT} \\\n  --tls-cert-file=${CERT_DIR}/apiserver.crt \\\n  $EXTRA_ARGS\nRestart=on-failure\n", env},
		{"[Service]\nExecStart=${KUBE_APISERVER} --v=1\n", "KUBE_APISERVER=/opt/kube-apiserver\nETCD_SERVERS=https://e:2379\nEXTRA_ARGS=\n"},
		{"[Service]\nExecStart=/usr/bin/env GODEBUG=x509sha1=0 ${KUBE_APISERVER} --v=3\n", env},
		{"[Service]\nType=simple\n", ""},
		{"[Service]\nEnvironment=V=1\nExecStart=/usr/bin/kube-apiserver --v=${V} --secure-port=6443\nExecStart=\nExecStart=/opt/bin/kube-apiserver --v=${V}\n", ""},
		{"[Service]\nExecStart=/usr/bin/kube-apiserver --v=8\nExecStart=/usr/bin/kube-apiserver --v=9\n", ""},
		{"[Service]\nEnvironment=V=2 BINARY=/usr/bin/kube-apiserver FILE=tokens.csv\nExecStart=-/usr/bin/kube-apiserver --v=${V}\n", ""},
		{"[Service]\nExecStart=!!/usr/bin/kube-apiserver --v=2\n", ""},
		{"[Service]\nExecStart=-@/usr/bin/kube-apiserver apiserver --v=${V}\n", "V=2"},
		{"[Service]\nExecStart=@/usr/bin/env env /usr/bin/kube-apiserver --v=2\n", ""},
		{"[Service]\nExecStart=:/usr/bin/kube-apiserver --v=2 --token-auth-file=/etc/$FILE\n", ""},
		{"[Service]\nExecStart=-:${BINARY} --v=2\n", "BINARY=/usr/bin/kube-apiserver"},
		{"[Service]\nExecStart=@/usr/bin/python3 kube-apiserver --v=2\n", ""},
		{"[Service]\nExecStart='/usr/bin/kube-apiserver' \"--v=2\" ${\n", "'A'=\"b\nbad line"},
	} {
		f.Add([]byte(seed.unit), []byte(seed.env))
	}
	dir := f.TempDir()
	// No drop-in directory of the machine's may take part.
	dropInRoots := []string{filepath.Join(dir, "etc")}
	unitPath := filepath.Join(dir, "kube-apiserver.service")
	envPath := filepath.Join(dir, "kube-apiserver.env")
	f.Fuzz(func(t *testing.T, unit, env []byte) {
		if err := os.WriteFile(unitPath, unit, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(envPath, env, 0o600); err != nil {
			t.Fatal(err)
		}
		service, err := readSystemdUnit(unitPath, []string{envPath}, dropInRoots)
		if err != nil {
			return
		}
		again, err := readSystemdUnit(unitPath, []string{envPath}, dropInRoots)
		if err != nil || !slices.Equal(service.Args, again.Args) {
			t.Errorf("not deterministic: %q, then %q (%v)", service.Args, again.Args, err)
		}
		// The sandbox answers for any path without failing.
		for _, arg := range service.Args {
			_, value, _ := strings.Cut(arg, "=")
			_ = service.CannotRead(value)
			_ = service.CannotWrite(value)
		}
		// So do the user and capabilities.
		_, _, _ = service.RunsAsRoot(), service.Capabilities().String(), service.CapabilitySettings()
	})
}
