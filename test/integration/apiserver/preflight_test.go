package apiserver

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// kubeadmNode is what `kubeadm init` writes on a control-plane node: its PKI and the
// kube-apiserver static pod manifest, written by this minor's kubeadm CLI.
type kubeadmNode struct {
	pki, manifest string
	port          int
	etcd          *framework.Etcd
}

// newKubeadmNode lays out a kubeadm node in a temporary directory with this minor's kubeadm
// (bins.Kubeadm): `kubeadm init phase certs all` writes the PKI, an etcd is started from
// kubeadm's etcd certificates, and `kubeadm init phase control-plane apiserver --dry-run`
// renders the kube-apiserver manifest. The manifest names that etcd as an external one on a
// free port, since kubeadm's stacked etcd would take the fixed port 2379; every other flag is
// kubeadm's. cluster is the ClusterConfiguration to start from (nil: kubeadm's defaults), and
// patches a directory of kubeadm patches ("" for none).
func newKubeadmNode(t *testing.T, bins framework.Binaries, cluster map[string]any, patches string) kubeadmNode {
	t.Helper()
	dir := t.TempDir()
	node := kubeadmNode{pki: filepath.Join(dir, "pki"), port: framework.FreePort(t)}
	if cluster == nil {
		cluster = map[string]any{}
	}
	cluster["apiVersion"], cluster["kind"] = "kubeadm.k8s.io/v1beta4", "ClusterConfiguration"
	cluster["kubernetesVersion"] = kubeadmVersion(t, bins)
	cluster["certificatesDir"] = node.pki
	apiServer, _ := cluster["apiServer"].(map[string]any)
	if apiServer == nil {
		apiServer = map[string]any{}
		cluster["apiServer"] = apiServer
	}
	apiServer["certSANs"] = []string{"127.0.0.1"}
	init := map[string]any{
		"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "InitConfiguration",
		// A documentation address (TEST-NET-1): the server only records it; no traffic goes there.
		"localAPIEndpoint": map[string]any{"advertiseAddress": "192.0.2.10", "bindPort": node.port},
		// The CRI socket is named, so kubeadm does not look for a runtime.
		"nodeRegistration": map[string]any{"name": "control-plane", "criSocket": "unix:///run/containerd/containerd.sock"},
	}
	if patches != "" {
		init["patches"] = map[string]any{"directory": patches}
	}
	writeConfig := func() string {
		var docs []string
		for _, doc := range []map[string]any{init, cluster} {
			data, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(data))
		}
		return writeTemp(t, "kubeadm.yaml", strings.Join(docs, "---\n"))
	}
	kubeadm(t, bins, "", "init", "phase", "certs", "all", "--config", writeConfig())

	pki := func(name string) string { return filepath.Join(node.pki, name) }
	node.etcd = framework.StartEtcdTLS(t, bins.Etcd, framework.EtcdTLS{
		CAFile:     pki(kubeadmconstants.EtcdCACertName),
		ServerCert: pki(kubeadmconstants.EtcdServerCertName),
		ServerKey:  pki(kubeadmconstants.EtcdServerKeyName),
		ClientCert: pki(kubeadmconstants.EtcdHealthcheckClientCertName),
		ClientKey:  pki(kubeadmconstants.EtcdHealthcheckClientKeyName),
	})
	cluster["etcd"] = map[string]any{"external": map[string]any{
		"endpoints": []string{node.etcd.ClientURL},
		"caFile":    pki(kubeadmconstants.EtcdCACertName),
		"certFile":  pki(kubeadmconstants.APIServerEtcdClientCertName),
		"keyFile":   pki(kubeadmconstants.APIServerEtcdClientKeyName),
	}}
	render := filepath.Join(dir, "manifests")
	kubeadm(t, bins, "KUBEADM_INIT_DRYRUN_DIR="+render, "init", "phase", "control-plane", "apiserver", "--config", writeConfig(), "--dry-run")
	node.manifest = filepath.Join(render, kubeadmconstants.KubeAPIServer+".yaml")
	return node
}

// kubeadm runs this minor's kubeadm CLI with env added to the environment; a failure fails
// the test with its output.
func kubeadm(t *testing.T, bins framework.Binaries, env string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bins.Kubeadm, args...)
	cmd.Env = os.Environ()
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubeadm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kubeadmVersion is the Kubernetes version this minor's kubeadm was built at.
func kubeadmVersion(t *testing.T, bins framework.Binaries) string {
	t.Helper()
	return strings.TrimSpace(kubeadm(t, bins, "", "version", "-o", "short"))
}

// manifestArgs reads the manifest's kube-apiserver command line.
func (n kubeadmNode) manifestArgs(t *testing.T) []string {
	t.Helper()
	c := n.container(t)
	return append(c.Command[1:], c.Args...)
}

// container reads the manifest's kube-apiserver container.
func (n kubeadmNode) container(t *testing.T) corev1.Container {
	t.Helper()
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(readFileBytes(t, n.manifest), &pod); err != nil {
		t.Fatalf("%s: %v", n.manifest, err)
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == kubeadmconstants.KubeAPIServer {
			return c
		}
	}
	t.Fatalf("%s has no kube-apiserver container", n.manifest)
	return corev1.Container{}
}

func TestPreflightOnAKubeadmNode(t *testing.T) {
	bins := framework.FindBinaries(t)
	node := newKubeadmNode(t, bins, nil, "")

	out, code := run(t, bins.APIServer, "preflight", "--manifest", node.manifest)
	if code != 0 {
		t.Fatalf("preflight failed on kubeadm's own manifest (exit %d):\n%s", code, out)
	}
	for _, want := range []string{"No problems found: it starts; the swap is safe.", "Validating admission chain", "NodeRestriction", "identical chains"} {
		if !strings.Contains(out, want) {
			t.Errorf("preflight output lacks %q:\n%s", want, out)
		}
	}

	t.Run("the shipped systemd unit's ExecStart passes on this node", func(t *testing.T) {
		root := framework.RepoRoot(t)
		pki := func(name string) string { return filepath.Join(node.pki, name) }
		// The shipped environment file, with this node's paths, port and etcd.
		env := environmentFile(t, filepath.Join(root, "build", "deploy", "systemd", "kube-apiserver.env"))
		admissionConfig := filepath.Join(node.pki, "admission-config.yaml")
		copyFile(t, filepath.Join(root, kitAdmission), admissionConfig)
		for k, v := range map[string]string{
			"KUBE_APISERVER_BINARY":            bins.APIServer,
			"BIND_ADDRESS":                     "127.0.0.1",
			"SECURE_PORT":                      fmt.Sprint(framework.FreePort(t)),
			"TLS_CERT_FILE":                    pki(kubeadmconstants.APIServerCertName),
			"TLS_PRIVATE_KEY_FILE":             pki(kubeadmconstants.APIServerKeyName),
			"CLIENT_CA_FILE":                   pki(kubeadmconstants.CACertName),
			"ETCD_SERVERS":                     node.etcd.ClientURL,
			"ETCD_CAFILE":                      pki(kubeadmconstants.EtcdCACertName),
			"ETCD_CERTFILE":                    pki(kubeadmconstants.APIServerEtcdClientCertName),
			"ETCD_KEYFILE":                     pki(kubeadmconstants.APIServerEtcdClientKeyName),
			"KUBELET_CLIENT_CERTIFICATE":       pki(kubeadmconstants.APIServerKubeletClientCertName),
			"KUBELET_CLIENT_KEY":               pki(kubeadmconstants.APIServerKubeletClientKeyName),
			"PROXY_CLIENT_CERT_FILE":           pki(kubeadmconstants.FrontProxyClientCertName),
			"PROXY_CLIENT_KEY_FILE":            pki(kubeadmconstants.FrontProxyClientKeyName),
			"REQUESTHEADER_CLIENT_CA_FILE":     pki(kubeadmconstants.FrontProxyCACertName),
			"SERVICE_ACCOUNT_KEY_FILE":         pki(kubeadmconstants.ServiceAccountPublicKeyName),
			"SERVICE_ACCOUNT_SIGNING_KEY_FILE": pki(kubeadmconstants.ServiceAccountPrivateKeyName),
			"ADMISSION_CONTROL_CONFIG_FILE":    admissionConfig,
			"KUBE_APISERVER_EXTRA_ARGS":        "--v=1",
		} {
			if _, ok := env[k]; !ok {
				t.Fatalf("the shipped environment file has no %s", k)
			}
			env[k] = v
		}
		var lines []string
		for k, v := range env {
			lines = append(lines, k+"="+v)
		}
		envFile := filepath.Join(t.TempDir(), "kube-apiserver.env")
		if err := os.WriteFile(envFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		shipped := filepath.Join(root, "build", "deploy", "systemd", "kube-apiserver.service")

		// This node keeps its files in a temporary directory, which the unit's sandbox hides
		// from the server (PrivateTmp=, ProtectHome=): preflight says so, and nothing else.
		out, code := run(t, bins.APIServer, "preflight", "--systemd-unit", shipped, "--environment-file", envFile)
		_, problems, _ := strings.Cut(out, " problem(s):\n")
		for _, line := range strings.Split(problems, "\n") {
			if strings.HasPrefix(line, "  - ") && !strings.Contains(line, "under the unit's sandbox") {
				t.Errorf("preflight of the shipped unit finds a problem other than the sandbox's:\n%s", out)
			}
		}
		if strings.HasPrefix(node.pki, "/tmp/") && (code != 1 || !strings.Contains(out, "PrivateTmp=yes gives the service a /tmp of its own")) {
			t.Errorf("preflight does not report that the unit's PrivateTmp hides %s (exit %d):\n%s", node.pki, code, out)
		}

		// With a drop-in that lifts those two settings, as an operator would for files there.
		unitDir := t.TempDir()
		unit := filepath.Join(unitDir, "kube-apiserver.service")
		copyFile(t, shipped, unit)
		if err := os.MkdirAll(unit+".d", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(unit+".d", "temporary-files.conf"), []byte("[Service]\nPrivateTmp=no\nProtectHome=no\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, code = run(t, bins.APIServer, "preflight", "--systemd-unit", unit, "--environment-file", envFile)
		if code != 0 {
			t.Fatalf("preflight failed on the shipped unit (exit %d):\n%s", code, out)
		}
		for _, plugin := range []string{"PodPreset", "SecurityContextDeny", "DenyEscalatingExec", "DenyExecOnPrivileged", "WebhookConfigurationGuard"} {
			if !strings.Contains(out, "+ "+plugin+" (") {
				t.Errorf("preflight does not list %s as added to stock's chain:\n%s", plugin, out)
			}
		}

		// The kit's unit passes a fixed set of flags: compared with the running unit (here the
		// same unit as stock ran it, with a flag of its own), a flag not carried over into
		// KUBE_APISERVER_EXTRA_ARGS is a problem, and carried over it is kept.
		writeEnv := func(changes map[string]string) string {
			var lines []string
			for k, v := range env {
				if c, ok := changes[k]; ok {
					v = c
				}
				lines = append(lines, k+"="+v)
			}
			path := filepath.Join(t.TempDir(), "kube-apiserver.env")
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}
		runningEnv := writeEnv(map[string]string{"ENABLE_ADMISSION_PLUGINS": "NodeRestriction", "KUBE_APISERVER_EXTRA_ARGS": "--v=1 --service-node-port-range=20000-22767"})
		out, code = run(t, bins.APIServer, "preflight", "--systemd-unit", unit, "--environment-file", envFile, "--running-unit", unit, "--running-environment-file", runningEnv)
		if want := "--service-node-port-range=20000-22767, which the running unit " + unit + " sets, is gone: carry it over from the running unit (KUBE_APISERVER_EXTRA_ARGS"; code != 1 || !strings.Contains(out, want) {
			t.Errorf("preflight --running-unit exits %d; want 1 and a problem saying %q:\n%s", code, want, out)
		}
		carried := writeEnv(map[string]string{"KUBE_APISERVER_EXTRA_ARGS": "--v=1 --service-node-port-range=20000-22767"})
		out, code = run(t, bins.APIServer, "preflight", "--systemd-unit", unit, "--environment-file", carried, "--running-unit", unit, "--running-environment-file", runningEnv)
		if code != 0 || !strings.Contains(out, "--enable-admission-plugins adds Portcullis's") {
			t.Errorf("preflight --running-unit with every flag carried over exits %d, want 0 and a note of our plugins added:\n%s", code, out)
		}
	})

	// The same command line, exactly, serves.
	node.serve(t, bins.APIServer, node.manifestArgs(t))
}

// serve runs binary with args, as the kubelet would run the manifest's container, and waits
// for the node's /readyz. It returns the server's log file.
func (n kubeadmNode) serve(t *testing.T, binary string, args []string) string {
	t.Helper()
	log := filepath.Join(t.TempDir(), "kube-apiserver.log")
	running := framework.StartProcess(t, "kube-apiserver", log, binary, args...)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(readFileBytes(t, filepath.Join(n.pki, kubeadmconstants.CACertName)))
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := running(); err != nil {
			t.Fatal(err)
		}
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", n.port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return log
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver with kubeadm's command line not ready within 2 minutes: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestPreflightFindsProblems(t *testing.T) {
	bins := framework.FindBinaries(t)
	dir := t.TempDir()
	files, err := controlplane.WritePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := controlplane.APIServerFlags(files, dir, "http://127.0.0.1:1", framework.FreePort(t))
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	eventRateLimitConfig := write("eventratelimit.yaml", "apiVersion: eventratelimit.admission.k8s.io/v1alpha1\nkind: Configuration\nlimits:\n- type: Namespace\n  qps: -5\n  burst: 10\n")
	invalidPluginConfig := write("admission-invalid.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  path: "+eventRateLimitConfig+"\n")
	brokenConfig := write("admission-broken.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: {this is not: [a list\n")
	brokenAuditPolicy := write("audit-policy.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: NotALevel\n")
	brokenEncryption := write("encryption.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc: {keys: [{name: k, secret: \"not base64!\"}]}\n")

	tests := []struct {
		name  string
		extra []string
		want  []string
	}{
		{
			name:  "a missing certificate file",
			extra: []string{"--tls-cert-file=" + filepath.Join(dir, "gone.crt")},
			want:  []string{"--tls-cert-file", "gone.crt", "no such file or directory"},
		},
		{
			name:  "an unknown plugin",
			extra: []string{"--enable-admission-plugins=NoSuchPlugin"},
			want:  []string{`"NoSuchPlugin" is unknown`},
		},
		{
			name:  "a broken admission config file",
			extra: []string{"--admission-control-config-file=" + brokenConfig},
			want:  []string{"admission", "admission-broken.yaml"},
		},
		{
			name:  "a plugin configuration with an invalid field",
			extra: []string{"--enable-admission-plugins=EventRateLimit", "--admission-control-config-file=" + invalidPluginConfig},
			want:  []string{"EventRateLimit", "qps"},
		},
		{
			name:  "an audit policy the server would refuse",
			extra: []string{"--audit-policy-file=" + brokenAuditPolicy},
			want:  []string{"--audit-policy-file", brokenAuditPolicy, "NotALevel"},
		},
		{
			name:  "an encryption key that is not base64",
			extra: []string{"--encryption-provider-config=" + brokenEncryption},
			want:  []string{"--encryption-provider-config", brokenEncryption, "base64"},
		},
		{
			name:  "a certificate that does not match its key",
			extra: []string{"--tls-private-key-file=" + files.Admin.KeyFile},
			want:  []string{"--tls-cert-file", "--tls-private-key-file", "private key does not match public key"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"preflight", "--"}, append(append([]string{}, base...), tc.extra...)...)
			out, code := run(t, bins.APIServer, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, out)
			}
			if !strings.Contains(out, "The swap is NOT safe:") {
				t.Errorf("no verdict:\n%s", out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("output does not say %q:\n%s", want, out)
				}
			}
		})
	}

	t.Run("a systemd drop-in's ExecStart is what is checked", func(t *testing.T) {
		unitDir := t.TempDir()
		unit := filepath.Join(unitDir, "kube-apiserver.service")
		if err := os.WriteFile(unit, []byte("[Service]\nExecStart="+bins.APIServer+" "+strings.Join(base, " ")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, code := run(t, bins.APIServer, "preflight", "--systemd-unit", unit); code != 0 {
			t.Fatalf("the unit alone: exit %d:\n%s", code, out)
		}
		if err := os.Mkdir(unit+".d", 0o755); err != nil {
			t.Fatal(err)
		}
		dropIn := "[Service]\nExecStart=\nExecStart=" + bins.APIServer + " " + strings.Join(base, " ") + " --audit-policy-file=" + brokenAuditPolicy + "\n"
		if err := os.WriteFile(filepath.Join(unit+".d", "10-audit.conf"), []byte(dropIn), 0o600); err != nil {
			t.Fatal(err)
		}
		out, code := run(t, bins.APIServer, "preflight", "--systemd-unit", unit)
		if code != 1 || !strings.Contains(out, "--audit-policy-file "+brokenAuditPolicy) {
			t.Errorf("with the drop-in: want exit 1 naming --audit-policy-file %s, got %d:\n%s", brokenAuditPolicy, code, out)
		}
	})

	t.Run("every problem is listed at once", func(t *testing.T) {
		args := append([]string{"preflight", "--"}, base...)
		args = append(args, "--client-ca-file="+filepath.Join(dir, "no-ca.crt"), "--service-account-key-file="+filepath.Join(dir, "no-sa.pub"))
		out, code := run(t, bins.APIServer, args...)
		if code != 1 || !strings.Contains(out, "no-ca.crt") || !strings.Contains(out, "no-sa.pub") {
			t.Errorf("want exit 1 naming both missing files, got %d:\n%s", code, out)
		}
	})

	t.Run("valid flags pass and show our plugins against stock", func(t *testing.T) {
		args := append([]string{"preflight", "--"}, base...)
		// Underscores in flag names are accepted, as the server accepts them.
		args = append(args, "--enable_admission_plugins=SecurityContextDeny,PodPreset")
		out, code := run(t, bins.APIServer, args...)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		for _, want := range []string{"+ PodPreset (mutating; a Portcullis plugin)", "+ SecurityContextDeny (validating; a Portcullis plugin)", "the swap is safe"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
