package preflight

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPreflightAuditModeWithoutAuditLog: a plugin or webhook in enforcement mode Audit
// records what it would refuse in the audit log; without one (a backend and a policy), a
// warning says it is recorded nowhere.
func TestPreflightAuditModeWithoutAuditLog(t *testing.T) {
	node := newPreflightNode(t)
	dir := t.TempDir()
	policy := "--audit-policy-file=" + writeFile(t, dir, "audit-policy.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
	logPath := "--audit-log-path=" + filepath.Join(dir, "audit", "audit.log")
	webhookBackend := "--audit-webhook-config-file=" + writeFile(t, dir, "audit-webhook.kubeconfig", kubeconfig("https://audit.example.com", node.files.CA.CertFile))
	config := func(name, portcullis string) string {
		path := filepath.Join(dir, name+".yaml")
		content := admissionConfigHeader + "- name: Portcullis\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: PortcullisConfiguration\n" + portcullis
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return "--admission-control-config-file=" + path
	}
	audit := config("audit", "    enforcementModes:\n    - name: SecurityContextDeny\n      modes: [Audit]\n")
	warnAudit := config("warn-audit", "    enforcementModes:\n    - name: SecurityContextDeny\n      modes: [Warn, Audit]\n")
	warn := config("warn", "    enforcementModes:\n    - name: SecurityContextDeny\n      modes: [Warn]\n")
	shadow := config("shadow", "    webhookDispatch:\n      validating:\n        enforcementModes:\n"+
		"        - {configuration: policies, webhook: check.example.com, modes: [Audit]}\n"+
		"        - {configuration: policies, webhook: other.example.com, modes: [Warn]}\n")
	const plugins = "--enable-admission-plugins=NodeRestriction,SecurityContextDeny"
	const noLog = ", but no audit log is configured (--audit-log-path or --audit-webhook-config-file, with --audit-policy-file): what it would refuse is recorded nowhere; "
	tests := []struct {
		name  string
		extra []string
		want  []string // the audit warnings, each as it starts
	}{
		{
			name:  "Audit, no audit flag",
			extra: []string{plugins, audit},
			want:  []string{"SecurityContextDeny runs in enforcement mode Audit" + noLog + "the command line has neither an audit backend nor --audit-policy-file: configure both"},
		},
		{
			name:  "Warn+Audit, a log without a policy",
			extra: []string{plugins, warnAudit, logPath},
			want:  []string{"SecurityContextDeny runs in enforcement mode Warn+Audit" + noLog + "the command line has an audit backend but no --audit-policy-file, without which the server logs nothing"},
		},
		{
			name:  "Audit, a policy without a backend",
			extra: []string{plugins, audit, policy},
			want:  []string{"SecurityContextDeny runs in enforcement mode Audit" + noLog + "the command line has --audit-policy-file but no audit backend"},
		},
		{name: "Audit, a log and a policy", extra: []string{plugins, audit, logPath, policy}},
		{name: "Audit, an audit webhook and a policy", extra: []string{plugins, audit, webhookBackend, policy}},
		{name: "Warn alone", extra: []string{plugins, warn}},
		{name: "Audit, the plugin not enabled", extra: []string{audit}},
		{
			name:  "a webhook in Audit",
			extra: []string{shadow},
			want:  []string{"ValidatingAdmissionWebhook's webhook policies/check.example.com (webhookDispatch.validating.enforcementModes) runs in enforcement mode Audit" + noLog},
		},
		{name: "a webhook in Audit, its plugin disabled", extra: []string{shadow, "--disable-admission-plugins=ValidatingAdmissionWebhook"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			report := Preflight(context.Background(), node.with(nil, tc.extra...))
			if len(report.Problems) > 0 {
				t.Fatalf("want no problem, got %q", report.Problems)
			}
			got := slices.DeleteFunc(slices.Clone(report.Warnings), func(w string) bool { return !strings.Contains(w, "no audit log is configured") })
			if len(got) != len(tc.want) {
				t.Fatalf("audit warnings %q, want %d starting %q", got, len(tc.want), tc.want)
			}
			for i, w := range got {
				if !strings.HasPrefix(w, tc.want[i]) {
					t.Errorf("warning %q, want it to start %q", w, tc.want[i])
				}
			}
		})
	}
}
