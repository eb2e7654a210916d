package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
)

// The seed corpora below are the inputs of preflight_source_test.go and preflight_test.go;
// crashers Go finds are kept under testdata/fuzz/<target>.

// FuzzCommandLineFromManifest reads a static pod manifest as `preflight --manifest` does.
func FuzzCommandLineFromManifest(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: kube-apiserver, namespace: kube-system}\nspec:\n  containers:\n  - name: kube-apiserver\n    image: registry.k8s.io/kube-apiserver:v1.37.1\n    command: [kube-apiserver, --secure-port=6443, --tls-cert-file=/etc/kubernetes/pki/apiserver.crt]\n",
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
		args, _, err := commandLineFromManifest(path)
		if err != nil {
			if !strings.Contains(err.Error(), "--manifest") {
				t.Errorf("the error does not name the flag: %v", err)
			}
			return
		}
		again, _, err := commandLineFromManifest(path)
		if err != nil || !slices.Equal(args, again) {
			t.Errorf("not deterministic: %q, then %q (%v)", args, again, err)
		}
	})
}

// FuzzCommandLineFromSystemdUnit reads a systemd unit and an environment file as
// `preflight --systemd-unit --environment-file` does: the unit's [Service] section, line
// continuations, Environment=, quoting, ${VAR} and $VAR expansion, ExecStart prefixes and an
// env(1) wrapper. The environment file is always given, so the unit's own EnvironmentFile=
// lines (which may name any file) are not read.
func FuzzCommandLineFromSystemdUnit(f *testing.F) {
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
	defer func(roots []string) { systemdDropInRoots = roots }(systemdDropInRoots)
	systemdDropInRoots = []string{filepath.Join(dir, "etc")}
	unitPath := filepath.Join(dir, "kube-apiserver.service")
	envPath := filepath.Join(dir, "kube-apiserver.env")
	f.Fuzz(func(t *testing.T, unit, env []byte) {
		if err := os.WriteFile(unitPath, unit, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(envPath, env, 0o600); err != nil {
			t.Fatal(err)
		}
		args, err := commandLineFromSystemdUnit(unitPath, envPath)
		if err != nil {
			return
		}
		again, err := commandLineFromSystemdUnit(unitPath, envPath)
		if err != nil || !slices.Equal(args, again) {
			t.Errorf("not deterministic: %q, then %q (%v)", args, again, err)
		}
	})
}

// FuzzParseServerFlags parses a command line (one argument a line) as preflight does, with
// our options and, for the comparison with stock, with stock's options after our plugin
// names are taken out of the admission flags.
func FuzzParseServerFlags(f *testing.F) {
	for _, seed := range [][]string{
		{"--secure-port=6443", "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt"},
		{"--etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379", "--v=2", "--profiling=false"},
		{"--enable-admission-plugins=NodeRestriction,PodPreset,SecurityContextDeny", "--disable-admission-plugins", "DenyEscalatingExec,ResourceQuota", "--v=2"},
		{"--enable_admission_plugins=PodSecurityPolicy", "--admission-control", "AlwaysAdmit,WebhookConfigurationGuard"},
		{"--etcd_servers=https://127.0.0.1:2379", "--feature-gates=AllAlpha=false", "--runtime-config=policy/v1beta1=true"},
		{"--admission-control-config-file=/etc/kubernetes/admission.yaml", "--", "--enable-admission-plugins=PodPreset"},
		{"positional", ""},
		{"--enable-admission-plugins"},
		// pflag reads the lists as CSV: withoutOurPlugins left a quoted name of ours in.
		{`--enable-admission-plugins="PodPreset",NodeRestriction`, "--disable-admission-plugins", `"Security""ContextDeny",WebhookConfigurationGuard`},
		{"--disable-admission-plugins", `"Security""ContextDeny", "WebhookConfigurationGuard"`},
		{"-v", "3", "--bogus"},
	} {
		f.Add(strings.Join(seed, "\n"))
	}
	ours := map[string]bool{}
	for _, p := range portcullisadmission.Plugins() {
		ours[p.Name] = true
	}
	f.Fuzz(func(t *testing.T, commandLine string) {
		args := strings.Split(commandLine, "\n")
		s, _, err := NewServerRunOptions()
		if err != nil {
			t.Fatal(err)
		}
		_, oursErr := parseServerFlags(s, args)

		stripped := withoutOurPlugins(args)
		if len(stripped) != len(args) {
			t.Fatalf("withoutOurPlugins changed the number of arguments: %q into %q", args, stripped)
		}
		stock := options.NewServerRunOptions()
		_, stockErr := parseServerFlags(stock, stripped)
		// Stock has the same flags and only the admission lists' values changed, which
		// parsing does not judge.
		if (oursErr == nil) != (stockErr == nil) {
			t.Fatalf("ours parses %q with %v, stock parses %q with %v", args, oursErr, stripped, stockErr)
		}
		if stockErr != nil {
			return
		}
		for _, list := range [][]string{stock.Admission.GenericAdmission.EnablePlugins, stock.Admission.GenericAdmission.DisablePlugins, stock.Admission.PluginNames} {
			for _, name := range list {
				if ours[strings.TrimSpace(name)] {
					t.Errorf("our plugin %q is still on stock's command line %q", name, stripped)
				}
			}
		}
	})
}
