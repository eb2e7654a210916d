package preflight

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
)

// preflightNode is a node's valid command line, its PKI and a directory for more files.
type preflightNode struct {
	dir   string
	files *controlplane.PKI
	args  []string
}

func newPreflightNode(t *testing.T) preflightNode {
	t.Helper()
	dir := t.TempDir()
	files, err := controlplane.WritePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	return preflightNode{dir: dir, files: files, args: controlplane.APIServerFlags(files, dir, "http://127.0.0.1:1", freePort(t))}
}

// with returns the node's flags without those named in drop, then extra.
func (n preflightNode) with(drop []string, extra ...string) []string {
	args := slices.DeleteFunc(slices.Clone(n.args), func(a string) bool {
		name, _, _ := strings.Cut(a, "=")
		return slices.Contains(drop, name)
	})
	return append(args, extra...)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func kubeconfig(server, caFile string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: webhook
  cluster: {server: %q, certificate-authority: %q}
users:
- name: apiserver
  user: {}
contexts:
- name: webhook
  context: {cluster: webhook, user: apiserver}
current-context: webhook
`, server, caFile)
}

// TestPreflightLoadsConfigFiles gives each configuration file the server loads at start-up
// once valid, which must pass, and once broken, which must be reported by flag, file and
// reason.
func TestPreflightLoadsConfigFiles(t *testing.T) {
	node := newPreflightNode(t)
	// --authorization-config excludes --authorization-mode; AlwaysAllow is the default.
	drop := []string{"--authorization-mode"}
	tests := []struct {
		flag        string
		extra       []string
		valid       string
		broken      string
		wantProblem string
	}{
		{
			flag:        "audit-policy-file",
			valid:       "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
			broken:      "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: NotALevel\n",
			wantProblem: "NotALevel",
		},
		{
			flag: "encryption-provider-config",
			valid: `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc: {keys: [{name: key1, secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=}]}
  - identity: {}
`,
			broken: `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc: {keys: [{name: key1, secret: "this is not base64!"}]}
`,
			wantProblem: "base64",
		},
		{
			flag: "authentication-config",
			valid: `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "https://issuer.example.com", audiences: [kubernetes]}
  claimMappings: {username: {claim: sub, prefix: "oidc:"}}
`,
			broken: `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "http://issuer.example.com", audiences: [kubernetes]}
  claimMappings: {username: {claim: sub, prefix: "oidc:"}}
`,
			wantProblem: "https",
		},
		{
			flag:        "authorization-config",
			valid:       "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- {type: Node, name: node}\n- {type: RBAC, name: rbac}\n",
			broken:      "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- {type: NotAType, name: nope}\n",
			wantProblem: "NotAType",
		},
		{
			flag:        "egress-selector-config-file",
			valid:       "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\negressSelections:\n- name: cluster\n  connection: {proxyProtocol: Direct}\n",
			broken:      "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\negressSelections:\n- name: cluster\n  connection: {proxyProtocol: NotAProtocol}\n",
			wantProblem: "NotAProtocol",
		},
		{
			flag:        "tracing-config-file",
			valid:       "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: localhost:4317\nsamplingRatePerMillion: 100\n",
			broken:      "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: -1\n",
			wantProblem: "samplingRatePerMillion",
		},
		{
			flag:        "token-auth-file",
			valid:       "secret-token,alice,1001,\"system:masters\"\n",
			broken:      "secret-token\n",
			wantProblem: "3 columns",
		},
		{
			flag:        "audit-webhook-config-file",
			valid:       kubeconfig("https://audit.example.com", node.files.CA.CertFile),
			broken:      "apiVersion: v1\nkind: Config\nclusters: []\n",
			wantProblem: "invalid configuration",
		},
		{
			flag:        "authentication-token-webhook-config-file",
			valid:       kubeconfig("https://authn.example.com", node.files.CA.CertFile),
			broken:      kubeconfig("https://authn.example.com", node.files.ServiceAccountPub),
			wantProblem: "certificate",
		},
		{
			flag:        "authorization-webhook-config-file",
			extra:       []string{"--authorization-mode=Node,Webhook"},
			valid:       kubeconfig("https://authz.example.com", node.files.CA.CertFile),
			broken:      kubeconfig("https://authz.example.com", filepath.Join(node.dir, "no-such-ca.crt")),
			wantProblem: "no-such-ca.crt",
		},
	}
	for _, tc := range tests {
		t.Run(tc.flag, func(t *testing.T) {
			dir := t.TempDir()
			valid := writeFile(t, dir, "valid", tc.valid)
			report := Preflight(context.Background(), node.with(drop, append(slices.Clone(tc.extra), "--"+tc.flag+"="+valid)...))
			if len(report.Problems) > 0 {
				t.Errorf("a valid --%s: want no problem (exit 0), got %q", tc.flag, report.Problems)
			}

			broken := writeFile(t, dir, "broken", tc.broken)
			report = Preflight(context.Background(), node.with(drop, append(slices.Clone(tc.extra), "--"+tc.flag+"="+broken)...))
			if !slices.ContainsFunc(report.Problems, func(p string) bool {
				return strings.Contains(p, "--"+tc.flag) && strings.Contains(p, broken) && strings.Contains(p, tc.wantProblem)
			}) {
				t.Errorf("a broken --%s: want a problem naming the flag, %s and %q (exit 1), got %q", tc.flag, broken, tc.wantProblem, report.Problems)
			}
		})
	}
}

func TestPreflightNormalizesFlagNames(t *testing.T) {
	node := newPreflightNode(t)
	args := node.with(nil, "--enable_admission_plugins=PodPreset,NodeRestriction")
	for i, a := range args {
		args[i] = strings.Replace(a, "--etcd-servers=", "--etcd_servers=", 1)
	}
	report := Preflight(context.Background(), args)
	if len(report.Problems) > 0 {
		t.Errorf("want no problem, got %q", report.Problems)
	}
	if !slices.Contains(report.Mutating, "PodPreset") || slices.Contains(report.StockMutating, "PodPreset") || !slices.Contains(report.StockMutating, "NodeRestriction") {
		t.Errorf("--enable_admission_plugins: want PodPreset in our chain only and NodeRestriction in both; ours %q, stock %q, notes %q", report.Mutating, report.StockMutating, report.Notes)
	}
}

func TestPreflightChecksServingFilesAndDirectories(t *testing.T) {
	node := newPreflightNode(t)
	notADir := writeFile(t, node.dir, "plain-file", "")
	serving := []string{"--tls-cert-file", "--tls-private-key-file"}
	tests := []struct {
		name        string
		args        []string
		wantProblem []string // all in one problem; none for a clean report
		wantNote    string
	}{
		{
			name:        "an SNI certificate with another key",
			args:        node.with(nil, "--tls-sni-cert-key="+node.files.Serving.CertFile+","+node.files.Admin.KeyFile),
			wantProblem: []string{"--tls-sni-cert-key", node.files.Admin.KeyFile, "private key does not match public key"},
		},
		{
			name:        "an SNI key that is missing",
			args:        node.with(nil, "--tls-sni-cert-key="+node.files.Serving.CertFile+","+filepath.Join(node.dir, "gone.key")+":example.com"),
			wantProblem: []string{"--tls-sni-cert-key", "gone.key", "no such file or directory"},
		},
		{
			name: "a valid SNI pair",
			args: node.with(nil, "--tls-sni-cert-key="+node.files.Serving.CertFile+","+node.files.Serving.KeyFile),
		},
		{
			name:        "a --cert-dir the server cannot write its certificate to",
			args:        node.with(append(serving, "--cert-dir"), "--cert-dir="+filepath.Join(notADir, "certs")),
			wantProblem: []string{"--cert-dir", notADir, "not a directory"},
		},
		{
			name:     "a --cert-dir the server can create",
			args:     node.with(append(serving, "--cert-dir"), "--cert-dir="+filepath.Join(node.dir, "new", "certs")),
			wantNote: "self-signed",
		},
		{
			name:        "an --audit-log-path whose directory cannot be made",
			args:        node.with(nil, "--audit-log-path="+filepath.Join(notADir, "audit", "audit.log")),
			wantProblem: []string{"--audit-log-path", notADir, "not a directory"},
		},
		{
			name:     "an --audit-log-path whose directory is missing",
			args:     node.with(nil, "--audit-log-path="+filepath.Join(node.dir, "audit", "audit.log")),
			wantNote: filepath.Join(node.dir, "audit") + " does not exist",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			report := Preflight(context.Background(), tc.args)
			if len(tc.wantProblem) == 0 && len(report.Problems) > 0 {
				t.Errorf("want no problem, got %q", report.Problems)
			}
			if len(tc.wantProblem) > 0 && !slices.ContainsFunc(report.Problems, func(p string) bool {
				return !slices.ContainsFunc(tc.wantProblem, func(w string) bool { return !strings.Contains(p, w) })
			}) {
				t.Errorf("want a problem saying all of %q, got %q", tc.wantProblem, report.Problems)
			}
			if tc.wantNote != "" && !slices.ContainsFunc(report.Notes, func(n string) bool { return strings.Contains(n, tc.wantNote) }) {
				t.Errorf("want a note saying %q, got %q", tc.wantNote, report.Notes)
			}
		})
	}
}

// dialTrap accepts on listeners and records every connection made to them.
type dialTrap struct {
	mu     sync.Mutex
	dialed []string
	ls     []net.Listener
}

func (d *dialTrap) listen(t *testing.T, network, address string) string {
	t.Helper()
	l, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	d.ls = append(d.ls, l)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			d.mu.Lock()
			d.dialed = append(d.dialed, network+" "+l.Addr().String())
			d.mu.Unlock()
			c.Close()
		}
	}()
	return l.Addr().String()
}

func (d *dialTrap) close() []string {
	for _, l := range d.ls {
		l.Close()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.dialed)
}

// TestPreflightContactsNothing listens on every address the flags and the files they name
// point at, and fails if preflight connects to any of them.
func TestPreflightContactsNothing(t *testing.T) {
	node := newPreflightNode(t)
	trap := &dialTrap{}
	defer trap.close()
	tcp := func() string { return trap.listen(t, "tcp", "127.0.0.1:0") }
	// The server's own address, which its loopback clients would use.
	securePort := strconv.Itoa(freePort(t))
	trap.listen(t, "tcp", "127.0.0.1:"+securePort)
	// Where a client pointed at "nowhere" would go; only root may listen there.
	if l, err := net.Listen("tcp", "127.0.0.1:1"); err == nil {
		l.Close()
		trap.listen(t, "tcp", "127.0.0.1:1")
	}
	signer := trap.listen(t, "unix", filepath.Join(t.TempDir(), "signer.sock"))
	kms := trap.listen(t, "unix", filepath.Join(t.TempDir(), "kms.sock"))

	dir := t.TempDir()
	ca := node.files.CA.CertFile
	encryption := writeFile(t, dir, "encryption.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - kms: {apiVersion: v2, name: vault, endpoint: "unix://`+kms+`", timeout: 3s}
  - identity: {}
`)
	authn := writeFile(t, dir, "authn.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "https://`+tcp()+`", audiences: [kubernetes]}
  claimMappings: {username: {claim: sub, prefix: "oidc:"}}
`)
	tracing := writeFile(t, dir, "tracing.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: "+tcp()+"\nsamplingRatePerMillion: 1000000\n")
	args := node.with([]string{"--secure-port", "--service-account-key-file", "--service-account-signing-key-file", "--etcd-servers", "--authorization-mode"},
		"--secure-port="+securePort,
		"--etcd-servers=https://"+tcp()+",https://"+tcp(),
		"--service-account-signing-endpoint="+signer,
		"--encryption-provider-config="+encryption,
		"--authentication-config="+authn,
		"--tracing-config-file="+tracing,
		"--audit-policy-file="+writeFile(t, dir, "audit.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"),
		"--audit-webhook-config-file="+writeFile(t, dir, "audit-webhook.yaml", kubeconfig("https://"+tcp(), ca)),
		"--authentication-token-webhook-config-file="+writeFile(t, dir, "authn-webhook.yaml", kubeconfig("https://"+tcp(), ca)),
		"--authorization-webhook-config-file="+writeFile(t, dir, "authz-webhook.yaml", kubeconfig("https://"+tcp(), ca)),
		"--authorization-mode=Node,Webhook,RBAC",
		"--enable-admission-plugins=PodPreset,SecurityContextDeny,NodeRestriction,EventRateLimit",
		"--admission-control-config-file="+writeFile(t, dir, "admission.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventRateLimit
  configuration:
    apiVersion: eventratelimit.admission.k8s.io/v1alpha1
    kind: Configuration
    limits: [{type: Server, qps: 50, burst: 100}]
`),
	)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan *PreflightReport, 1)
	go func() { done <- Preflight(ctx, args) }()
	var report *PreflightReport
	select {
	case report = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("preflight did not return within 10s; connections made: %q", trap.close())
	}
	if dialed := trap.close(); len(dialed) > 0 {
		t.Errorf("preflight connected to %q", dialed)
	}
	if len(report.Problems) > 0 {
		t.Errorf("want no problem, got %q", report.Problems)
	}
	for _, want := range []string{"--service-account-signing-endpoint " + signer, "KMS plugin (vault at unix://" + kms} {
		if !slices.ContainsFunc(report.Notes, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("want a note saying %q, got %q", want, report.Notes)
		}
	}
}

// TestPreflightWarnsOfPluginsThatNeedSetup: PodSecurityPolicy refuses every pod that no
// usable policy admits, kube-system's included, so enabling it is worth a warning that says
// what to do first; a plugin that needs no setup gets none.
func TestPreflightWarnsOfPluginsThatNeedSetup(t *testing.T) {
	node := newPreflightNode(t)
	for _, tc := range []struct {
		plugins string
		want    []string
	}{
		{"NodeRestriction,PodPreset", nil},
		{"NodeRestriction,PodSecurityPolicy", []string{"PodSecurityPolicy is enabled", "build/deploy/podsecuritypolicy", "kube-system"}},
	} {
		t.Run(tc.plugins, func(t *testing.T) {
			report := Preflight(context.Background(), node.with(nil, "--enable-admission-plugins="+tc.plugins))
			if len(report.Problems) > 0 {
				t.Fatalf("want no problem, got %q", report.Problems)
			}
			warnings := strings.Join(report.Warnings, "\n")
			if len(tc.want) == 0 && warnings != "" {
				t.Errorf("want no warning, got %q", warnings)
			}
			for _, want := range tc.want {
				if !strings.Contains(warnings, want) {
					t.Errorf("warnings %q do not say %q", warnings, want)
				}
			}
		})
	}
}

// TestPreflightRollbackVerdict: preflight says whether stock kube-apiserver would start with
// the same files and the command line less our plugin names, judged by upstream's own
// options, registry and loaders; the forms of earlier releases that stop stock are named
// with their replacement.
func TestPreflightRollbackVerdict(t *testing.T) {
	node := newPreflightNode(t)
	write := func(name, content string) string {
		path := filepath.Join(node.dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const admissionHeader = "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"
	portcullisEntry := write("portcullis.yaml", admissionHeader+"- name: Portcullis\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: PortcullisConfiguration\n"+
		"    servedAPIs: [policy/v1beta1]\n    enforcementModes:\n    - name: SecurityContextDeny\n      modes: [Audit]\n")
	legacyWebhookEntry := write("legacy-webhook.yaml", legacyWebhookEntryYAML(write("webhooks.kubeconfig", kubeconfig("https://webhooks.example.com", node.files.CA.CertFile))))
	tests := []struct {
		name                     string
		extra                    []string
		wantProblems, wantBlocks []string
		wantWarnings, wantEdits  []string
	}{
		{name: "stock's command line"},
		{
			name:      "our plugins in every admission flag",
			extra:     []string{"--enable-admission-plugins=NodeRestriction,SecurityContextDeny,PodPreset", "--disable-admission-plugins=DenyEscalatingExec,AlwaysPullImages"},
			wantEdits: []string{"remove SecurityContextDeny, PodPreset from --enable-admission-plugins", "remove DenyEscalatingExec from --disable-admission-plugins"},
		},
		{
			name:         "the Portcullis entry",
			extra:        []string{"--enable-admission-plugins=SecurityContextDeny", "--admission-control-config-file=" + portcullisEntry},
			wantEdits:    []string{"remove SecurityContextDeny from --enable-admission-plugins"},
			wantWarnings: []string{"SecurityContextDeny runs in enforcement mode Audit, but no audit log is configured"},
		},
		{
			// Stock starts with it (test/integration/apiserver's rollback test): it serves nothing there.
			name:         "runtime-config naming policy/v1beta1, as earlier releases had it",
			extra:        []string{"--runtime-config=policy/v1beta1/podsecuritypolicies=true"},
			wantWarnings: []string{"list policy/v1beta1 in the admission config file's Portcullis entry, servedAPIs"},
		},
		// Forms the server does not serve PodSecurityPolicy with, so warns of nothing.
		{name: "runtime-config turning policy/v1beta1 off", extra: []string{"--runtime-config=policy/v1beta1=false"}},
		{name: "runtime-config turning policy/v1beta1 off, as 0", extra: []string{"--runtime-config=policy/v1beta1=0"}},
		{name: "runtime-config naming an upstream resource of policy/v1beta1", extra: []string{"--runtime-config=policy/v1beta1/poddisruptionbudgets=true"}},
		{
			name:  "our dispatch kind in a webhook entry, as earlier releases had it",
			extra: []string{"--admission-control-config-file=" + legacyWebhookEntry},
			wantBlocks: []string{"--admission-control-config-file " + legacyWebhookEntry, "WebhookDispatchConfiguration",
				"plugins[0] (ValidatingAdmissionWebhook)", "webhookDispatch.validating"},
		},
		{
			name:         "a typo in runtime-config stops both servers",
			extra:        []string{"--runtime-config=policy/v1beta2=true"},
			wantProblems: []string{"--runtime-config", "policy/v1beta2"},
			wantBlocks:   []string{"--runtime-config", "policy/v1beta2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			report := Preflight(context.Background(), node.with(nil, tc.extra...))
			for _, c := range []struct {
				what      string
				got, want []string
			}{
				{"problems", report.Problems, tc.wantProblems},
				{"rollback blockers", report.RollbackBlockers, tc.wantBlocks},
				{"warnings", report.Warnings, tc.wantWarnings},
				{"rollback edits", report.RollbackEdits, tc.wantEdits},
			} {
				joined := strings.Join(c.got, "\n")
				if len(c.want) == 0 && len(c.got) > 0 {
					t.Errorf("want no %s, got %q", c.what, c.got)
				}
				for _, want := range c.want {
					if !strings.Contains(joined, want) {
						t.Errorf("%s %q do not say %q", c.what, c.got, want)
					}
				}
			}
			var out strings.Builder
			report.Source = "test"
			report.decide()
			report.Print(&out)
			verdict := "Rollback: stock kube-apiserver"
			if len(tc.wantBlocks) > 0 {
				verdict = "Rollback is BLOCKED"
			}
			if !strings.Contains(out.String(), verdict) {
				t.Errorf("the report does not say %q:\n%s", verdict, out.String())
			}
		})
	}
}

// legacyWebhookEntryYAML is an admission config file with our dispatch kind in
// ValidatingAdmissionWebhook's entry, as earlier releases had it, naming a webhook kubeconfig
// (1.35's upstream requires one).
func legacyWebhookEntryYAML(kubeconfig string) string {
	return "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n" +
		"- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: WebhookDispatchConfiguration\n" +
		"    kubeConfigFile: " + kubeconfig + "\n    circuitBreaker: {}\n"
}

// TestPreflightExitCodes runs the preflight command: 0 when the swap is safe and a rollback
// would work, 1 when the swap is not safe, 3 when only the rollback is blocked.
func TestPreflightExitCodes(t *testing.T) {
	node := newPreflightNode(t)
	// Our dispatch kind in upstream's webhook entry, as earlier releases had it: stock refuses it.
	legacyWebhookEntry := writeFile(t, node.dir, "legacy-webhook.yaml", legacyWebhookEntryYAML(
		writeFile(t, node.dir, "webhooks.kubeconfig", kubeconfig("https://webhooks.example.com", node.files.CA.CertFile))))
	for _, tc := range []struct {
		name    string
		extra   []string
		wantErr bool
		want    int
	}{
		{name: "safe", want: 0},
		{name: "rollback blocked", extra: []string{"--admission-control-config-file=" + legacyWebhookEntry}, wantErr: true, want: ExitRollbackBlocked},
		{name: "not safe", extra: []string{"--runtime-config=policy/v1beta2=true"}, wantErr: true, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			cmd := commandWithExitCode(&code)
			var out strings.Builder
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(append([]string{"--"}, node.with(nil, tc.extra...)...))
			err := cmd.Execute()
			if (err != nil) != tc.wantErr || code != tc.want {
				t.Errorf("preflight: error %v, exit code %d; want an error: %v, exit code %d (0: cli.Run's own)\n%s", err, code, tc.wantErr, tc.want, out.String())
			}
		})
	}
}

// TestPreflightUsageExitCode: preflight that cannot run exits 2, whatever the reason, and
// never with the codes of a verdict.
func TestPreflightUsageExitCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// want is in the error, when set.
		want string
	}{
		{name: "a flag preflight does not know", args: []string{"--no-such-flag"}},
		{name: "flags that do not go together", args: []string{"--manifest", "a.yaml", "--systemd-unit", "b.service"}},
		{name: "an unreadable manifest", args: []string{"--manifest", filepath.Join(t.TempDir(), "missing.yaml")}},
		{name: "an unknown output format", args: []string{"-o", "yaml", "--", "--v=2"}},
		{name: "nothing to check", args: []string{}},
		{name: "a running unit without a unit", args: []string{"--manifest", "a.yaml", "--running-unit", "b.service"}},
		{name: "a running environment file without a running unit", args: []string{"--systemd-unit", "a.service", "--running-environment-file", "b.env"}},
		// The guide's $(sed ...) that found no kubernetesVersion: not "no version given".
		{name: "an empty Kubernetes version", args: []string{"--rollback", "--manifest", "a.yaml", "--running-manifest", "b.yaml", "--kubernetes-version", ""},
			want: "--kubernetes-version is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			cmd := commandWithExitCode(&code)
			var out strings.Builder
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err == nil || code != ExitUsage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("preflight %q: error %v, exit code %d; want an error saying %q and exit code %d\n%s", tc.args, err, code, tc.want, ExitUsage, out.String())
			}
		})
	}
}

// TestPreflightRepeatedFlags: a single-valued flag given twice keeps only its last value,
// silently, so preflight reports it; flags whose values add up (--runtime-config, lists)
// are not reported.
func TestPreflightRepeatedFlags(t *testing.T) {
	node := newPreflightNode(t)
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{name: "single-valued, twice", extra: []string{"--admission-control-config-file=/etc/a.yaml", "--admission-control-config-file=/etc/b.yaml"},
			want: `--admission-control-config-file is given 2 times ("/etc/a.yaml", "/etc/b.yaml"): the server keeps only the last, "/etc/b.yaml"`},
		{name: "single-valued, the same value twice", extra: []string{"--v=2", "--v=2"}},
		{name: "a map, twice", extra: []string{"--runtime-config=api/all=true", "--runtime-config=batch/v1=true"}},
		{name: "a list, twice", extra: []string{"--service-account-key-file=" + node.files.ServiceAccountPub, "--service-account-key-file=" + node.files.ServiceAccountKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report := Preflight(context.Background(), node.with(nil, tc.extra...))
			repeated := slices.DeleteFunc(slices.Clone(report.Problems), func(p string) bool { return !strings.Contains(p, "is given") })
			switch {
			case tc.want == "" && len(repeated) > 0:
				t.Errorf("want no repeated flag reported, got %q", repeated)
			case tc.want != "" && !slices.ContainsFunc(repeated, func(p string) bool { return strings.Contains(p, tc.want) }):
				t.Errorf("problems %q do not say %q", report.Problems, tc.want)
			}
		})
	}
}

// TestPreflightHostPathMounts: a file the flags name must be mounted into the static pod's
// container from the host, or the server, unlike preflight, cannot read it.
func TestPreflightHostPathMounts(t *testing.T) {
	r := &PreflightReport{namedFiles: [][2]string{
		{"tls-cert-file", "/etc/kubernetes/pki/apiserver.crt"},
		{"admission-control-config-file", "/etc/kubernetes/portcullis/admission-config.yaml"},
		{"audit-policy-file", "/etc/kubernetes/audit/policy.yaml"},
	}}
	r.checkHostPathMounts([]string{"/etc/kubernetes/pki", "/etc/kubernetes/portcullis/admission-config.yaml", "/etc/kubernetes/aud"})
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "--audit-policy-file /etc/kubernetes/audit/policy.yaml: no hostPath volume") {
		t.Errorf("problems %q, want the audit policy alone reported", r.Problems)
	}
}
