package preflight

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/nodeconfig"
	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/serveroptions"
)

const admissionConfigHeader = "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"

// webhookKubeconfig is a webhook plugin's kubeconfig: one user, for the webhooks of
// *.webhooks.svc, with a client certificate and key.
func webhookKubeconfig(certFile, keyFile string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
users:
- name: "*.webhooks.svc"
  user: {client-certificate: %q, client-key: %q}
`, certFile, keyFile)
}

// TestPreflightAdmissionConfigFiles: the files the admission config file names, in the
// entries the server reads, are checked as the flags' are, each named by file, entry and
// field; what the admission chain's load reports already is not reported again.
func TestPreflightAdmissionConfigFiles(t *testing.T) {
	node := newPreflightNode(t)
	dir := t.TempDir()
	adm := filepath.Join(dir, "admission.yaml")
	if err := os.MkdirAll(filepath.Join(dir, "webhooks", "certs"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A kubeconfig whose client certificate is relative to its own directory, and missing.
	missingCert := filepath.Join(dir, "webhooks", "certs", "webhook.crt")
	brokenKubeconfig := writeFile(t, filepath.Join(dir, "webhooks"), "broken.kubeconfig", webhookKubeconfig("certs/webhook.crt", node.files.Admin.KeyFile))
	goodKubeconfig := writeFile(t, dir, "good.kubeconfig", webhookKubeconfig(node.files.Admin.CertFile, node.files.Admin.KeyFile))
	writeFile(t, filepath.Join(dir, "webhooks"), "mutating.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: "+goodKubeconfig+"\n")
	webhookEntry := func(plugin, kubeconfig string) string {
		return "- name: " + plugin + "\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: " + kubeconfig + "\n"
	}
	missingCA := filepath.Join(dir, "prometheus-ca.crt")
	initialResources := "- name: InitialResources\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: InitialResourcesConfiguration\n" +
		"    prometheus: {url: \"https://prometheus.example.com:9090\", caFile: " + missingCA + "}\n"
	imagePolicyKubeconfig := writeFile(t, dir, "imagepolicy.kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: imagepolicy
  cluster: {server: "https://127.0.0.1:1", certificate-authority: %q}
users:
- name: apiserver
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: imagepolicy
  context: {cluster: imagepolicy, user: apiserver}
current-context: imagepolicy
`, node.files.CA.CertFile, node.files.Admin.CertFile, node.files.Admin.KeyFile))
	imagePolicy := "- name: ImagePolicyWebhook\n  configuration:\n    imagePolicy: {kubeConfigFile: " + imagePolicyKubeconfig + ", allowTTL: 50, denyTTL: 50, retryBackoff: 500, defaultAllow: true}\n"

	label := func(entry string) string { return "admission-control-config-file " + adm + ": " + entry }
	tests := []struct {
		name    string
		plugins string // --enable-admission-plugins
		entries string
		// wantProblems are problems exactly; wantOnce are strings exactly one problem says.
		wantProblems, wantOnce []string
		wantNamed              [][2]string
		notNamed               []string
	}{
		{
			name:    "a webhook kubeconfig's user files",
			entries: webhookEntry("ValidatingAdmissionWebhook", brokenKubeconfig),
			wantProblems: []string{fmt.Sprintf("%s: plugins[0] (ValidatingAdmissionWebhook): kubeConfigFile %s: user *.webhooks.svc: client-certificate %s: open %s: no such file or directory",
				adm, brokenKubeconfig, missingCert, missingCert)},
			wantNamed: [][2]string{
				{label("plugins[0] (ValidatingAdmissionWebhook): kubeConfigFile"), brokenKubeconfig},
				{label("plugins[0] (ValidatingAdmissionWebhook): kubeConfigFile " + brokenKubeconfig + ": user *.webhooks.svc: client-certificate"), missingCert},
				{label("plugins[0] (ValidatingAdmissionWebhook): kubeConfigFile " + brokenKubeconfig + ": user *.webhooks.svc: client-key"), node.files.Admin.KeyFile},
			},
		},
		{
			name:    "an entry in its own file, relative to the admission config file",
			entries: "- name: MutatingAdmissionWebhook\n  path: webhooks/mutating.yaml\n",
			wantNamed: [][2]string{
				{label("plugins[0] (MutatingAdmissionWebhook): path"), filepath.Join(dir, "webhooks", "mutating.yaml")},
				{label("plugins[0] (MutatingAdmissionWebhook): kubeConfigFile"), goodKubeconfig},
				{label("plugins[0] (MutatingAdmissionWebhook): kubeConfigFile " + goodKubeconfig + ": user *.webhooks.svc: client-certificate"), node.files.Admin.CertFile},
			},
		},
		{
			name:     "a missing kubeConfigFile is the chain's load to report",
			entries:  webhookEntry("ValidatingAdmissionWebhook", filepath.Join(dir, "none.kubeconfig")),
			wantOnce: []string{filepath.Join(dir, "none.kubeconfig")},
		},
		{
			name:      "InitialResources enabled: its missing CA file is the chain's load to report",
			plugins:   "NodeRestriction,InitialResources",
			entries:   initialResources,
			wantOnce:  []string{"prometheus.caFile: open " + missingCA},
			wantNamed: [][2]string{{label("plugins[0] (InitialResources): prometheus.caFile"), missingCA}},
		},
		{
			name:     "InitialResources not enabled: the server reads none of its files",
			entries:  initialResources,
			notNamed: []string{missingCA},
		},
		{
			name:     "a second entry of a plugin is not read",
			entries:  webhookEntry("ValidatingAdmissionWebhook", goodKubeconfig) + webhookEntry("ValidatingAdmissionWebhook", brokenKubeconfig),
			notNamed: []string{brokenKubeconfig},
		},
		{
			name:    "ImagePolicyWebhook's kubeconfig and the files of its context",
			plugins: "NodeRestriction,ImagePolicyWebhook",
			entries: imagePolicy,
			wantNamed: [][2]string{
				{label("plugins[0] (ImagePolicyWebhook): imagePolicy.kubeConfigFile"), imagePolicyKubeconfig},
				{label("plugins[0] (ImagePolicyWebhook): imagePolicy.kubeConfigFile " + imagePolicyKubeconfig + ": cluster imagepolicy: certificate-authority"), node.files.CA.CertFile},
				{label("plugins[0] (ImagePolicyWebhook): imagePolicy.kubeConfigFile " + imagePolicyKubeconfig + ": user apiserver: client-key"), node.files.Admin.KeyFile},
			},
		},
		{
			name:     "ImagePolicyWebhook not enabled",
			entries:  imagePolicy,
			notNamed: []string{imagePolicyKubeconfig},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(adm, []byte(admissionConfigHeader+tc.entries), 0o600); err != nil {
				t.Fatal(err)
			}
			extra := []string{"--admission-control-config-file=" + adm}
			if tc.plugins != "" {
				extra = append(extra, "--enable-admission-plugins="+tc.plugins)
			}
			report := Preflight(context.Background(), node.with(nil, extra...))
			if tc.wantOnce == nil && !slices.Equal(report.Problems, tc.wantProblems) {
				t.Errorf("problems %q, want %q", report.Problems, tc.wantProblems)
			}
			for _, want := range tc.wantOnce {
				if n := len(slices.DeleteFunc(slices.Clone(report.Problems), func(p string) bool { return !strings.Contains(p, want) })); n != 1 {
					t.Errorf("%d problems say %q, want 1: %q", n, want, report.Problems)
				}
			}
			for _, want := range tc.wantNamed {
				if !slices.Contains(report.namedFiles, want) {
					t.Errorf("%q is not among the named files %q", want, report.namedFiles)
				}
			}
			for _, path := range tc.notNamed {
				if slices.ContainsFunc(report.namedFiles, func(n [2]string) bool { return n[1] == path }) {
					t.Errorf("%s is named, want not: %q", path, report.namedFiles)
				}
			}
		})
	}
}

// TestCheckAdmissionConfigFilesEntryPaths: an enabled plugin's entry in a file of its own
// must be readable (the server's load exits the process without it); the Portcullis entry's
// is reported by its own load, and a disabled plugin's is never read.
func TestCheckAdmissionConfigFilesEntryPaths(t *testing.T) {
	dir := t.TempDir()
	adm := writeFile(t, dir, "admission.yaml", admissionConfigHeader+
		"- name: Portcullis\n  path: portcullis.yaml\n"+
		"- name: EventRateLimit\n  path: "+filepath.Join(dir, "eventratelimit.yaml")+"\n"+
		"- name: AlwaysPullImages\n  path: alwayspullimages.yaml\n")
	s, _, err := serveroptions.New()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseServerFlags(s, []string{"--admission-control-config-file=" + adm, "--enable-admission-plugins=EventRateLimit"}); err != nil {
		t.Fatal(err)
	}
	r := &PreflightReport{}
	checkAdmissionConfigFiles(r, s)
	missing := filepath.Join(dir, "eventratelimit.yaml")
	want := []string{fmt.Sprintf("%s: plugins[1] (EventRateLimit): path %s: open %s: no such file or directory", adm, missing, missing)}
	if !slices.Equal(r.Problems, want) {
		t.Errorf("problems %q, want %q", r.Problems, want)
	}
	wantNamed := [][2]string{
		{"admission-control-config-file " + adm + ": plugins[0] (Portcullis): path", filepath.Join(dir, "portcullis.yaml")},
		{"admission-control-config-file " + adm + ": plugins[1] (EventRateLimit): path", missing},
	}
	if !slices.Equal(r.namedFiles, wantNamed) {
		t.Errorf("named files %q, want %q", r.namedFiles, wantNamed)
	}
}

// TestAdmissionConfigFilesMountedAndSandboxed: the files the admission config file names
// are held to the static pod's mounts and the unit's sandbox, as the flags' files are.
func TestAdmissionConfigFilesMountedAndSandboxed(t *testing.T) {
	node := newPreflightNode(t)
	config, secrets := t.TempDir(), t.TempDir()
	kubeconfig := writeFile(t, secrets, "webhooks.kubeconfig", webhookKubeconfig(node.files.Admin.CertFile, node.files.Admin.KeyFile))
	adm := writeFile(t, config, "admission.yaml", admissionConfigHeader+
		"- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: "+kubeconfig+"\n")
	report := Preflight(context.Background(), node.with(nil, "--admission-control-config-file="+adm))
	if len(report.Problems) > 0 {
		t.Fatalf("want no problem, got %q", report.Problems)
	}
	label := "--admission-control-config-file " + adm + ": plugins[0] (ValidatingAdmissionWebhook): kubeConfigFile " + kubeconfig

	mounts := *report
	mounts.checkHostPathMounts([]string{node.dir, config})
	if want := label + ": no hostPath volume of the static pod mounts it"; !slices.ContainsFunc(mounts.Problems, func(p string) bool { return strings.HasPrefix(p, want) }) {
		t.Errorf("problems %q, want one saying %q", mounts.Problems, want)
	}

	sandboxed := *report
	sandboxed.checkSandbox(&nodeconfig.SystemdService{Settings: map[string][]string{"InaccessiblePaths": {secrets}}})
	if want := label + ": the server cannot read it under the unit's sandbox: InaccessiblePaths=" + secrets; !slices.Contains(sandboxed.Problems, want+" hides it from the service") {
		t.Errorf("problems %q, want %q", sandboxed.Problems, want+" hides it from the service")
	}
}
