package preflight

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
)

// TestPreflightVerdictParts: besides whether the server starts, preflight says what it
// refuses that stock admits (plugins of ours enforcing), which verdicts change after a
// rollback to stock (our plugins stop, shadows enforce), and what an earlier release of ours
// would refuse in the configuration.
func TestPreflightVerdictParts(t *testing.T) {
	node := newPreflightNode(t)
	config := func(t *testing.T, portcullis, entries string) string {
		path := filepath.Join(t.TempDir(), "admission.yaml")
		content := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n" + entries
		if portcullis != "" {
			content += "- name: Portcullis\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: PortcullisConfiguration\n" + portcullis
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return "--admission-control-config-file=" + path
	}
	has := func(list []string, want string) bool {
		return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, want) })
	}
	for _, tc := range []struct {
		name                string
		plugins, portcullis string
		// entries are other plugins' entries in the admission config file.
		entries                string
		wantRefusals           []string
		notRefusing            []string
		wantChanges, wantNotes []string
		wantNotesByMinor       map[string][]string
	}{
		{
			name:         "refusing plugins enforcing",
			plugins:      "NodeRestriction,SecurityContextDeny,DenyEscalatingExec,PodPreset",
			wantRefusals: []string{"SecurityContextDeny (enforcing): pods that set runAsUser", "kubeadm upgrade", "DenyEscalatingExec (enforcing): kubectl exec", "etcd"},
			wantChanges:  []string{"SecurityContextDeny, PodPreset, DenyEscalatingExec stop"},
		},
		{
			// Refusals of their own protocol (the pending list, the gates) and of their start.
			name:    "initializers and presets enforcing",
			plugins: "NodeRestriction,Initializers,PodPreset",
			wantRefusals: []string{
				"Initializers (enforcing): while the server starts, every create",
				"a create that names its pending initializers",
				"removing a pending pod's scheduling gate",
				"PodPreset (enforcing): new pods",
			},
		},
		{
			name:    "refusals a configuration decides: a guard check at Deny, unresolved volumes refused, breakers and budgets",
			plugins: "NodeRestriction,WebhookConfigurationGuard,PersistentVolumeLabel,MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
			entries: "- name: WebhookConfigurationGuard\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: WebhookConfigurationGuardConfiguration\n    checks:\n      catchAll: Deny\n" +
				"- name: PersistentVolumeLabel\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: PersistentVolumeLabelConfiguration\n    unresolved: Refuse\n",
			portcullis: "    webhookDispatch:\n      mutating:\n        circuitBreaker: {}\n      validating:\n        timeBudget: {}\n",
			wantRefusals: []string{
				"WebhookConfigurationGuard (enforcing): webhook configurations that fail its checks at Deny (catchAll)",
				"PersistentVolumeLabel (enforcing): PersistentVolumes of in-tree zonal volumes",
				"the mutating webhooks' circuit breakers: a request to a failurePolicy Fail webhook whose breaker is open is refused",
				"the validating webhooks' time budget: a request whose budget leaves a failurePolicy Fail webhook no time",
			},
		},
		{
			name:        "the guard and the volume labels at their defaults refuse nothing stock admits",
			plugins:     "NodeRestriction,WebhookConfigurationGuard,PersistentVolumeLabel",
			notRefusing: []string{"WebhookConfigurationGuard", "PersistentVolumeLabel"},
		},
		{
			name:        "the day-one modes",
			plugins:     "NodeRestriction,SecurityContextDeny,DenyEscalatingExec",
			portcullis:  "    enforcementModes:\n    - name: SecurityContextDeny\n      modes: [Warn, Audit]\n    - name: DenyEscalatingExec\n      modes: [Warn, Audit]\n",
			notRefusing: []string{"SecurityContextDeny", "DenyEscalatingExec"},
			wantNotes:   []string{"SecurityContextDeny runs in enforcement mode Warn+Audit: it admits what it would refuse"},
		},
		{
			name:    "a shadow webhook, an upstream plugin in Audit, newer fields and plugins",
			plugins: "NodeRestriction,InitialResources",
			portcullis: "    admissionTrace:\n      onRequest: true\n    enforcementModes:\n    - name: LimitRanger\n      modes: [Audit]\n" +
				"    webhookDispatch:\n      mutating:\n        enforcementModes:\n        - configuration: labels\n          webhook: team.example.com\n          modes: [Audit]\n",
			wantChanges: []string{
				"InitialResources stop",
				"LimitRanger runs in enforcement mode Audit here; stock denies what it refuses",
				"mutating webhook team.example.com of labels runs in mode Audit here (a shadow); stock enforces it: its patches are applied",
			},
			// On 1.37, whose line began before these came; on 1.35 and 1.36, whose first
			// releases carry them, going back within the line refuses nothing.
			wantNotesByMinor: map[string][]string{"1.37": {
				"plugins[0] (Portcullis): admissionTrace is new in v1.37.2+portcullis.1: a Portcullis release before it refuses this file",
				"plugins[0] (Portcullis): webhookDispatch.mutating.enforcementModes is new in v1.37.2+portcullis.1",
				"InitialResources is new in v1.37.2+portcullis.1: a Portcullis release before it refuses the name in the flags",
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra := []string{"--enable-admission-plugins=" + tc.plugins}
			if tc.portcullis != "" || tc.entries != "" {
				extra = append(extra, config(t, tc.portcullis, tc.entries))
			}
			report := Preflight(context.Background(), node.with([]string{"--enable-admission-plugins"}, extra...))
			report.judge()
			report.decide()
			if len(report.Problems) > 0 || !report.Starts {
				t.Fatalf("want no problem (it starts), got %q (starts: %v)", report.Problems, report.Starts)
			}
			for _, want := range tc.wantRefusals {
				if !has(report.Refusals, want) {
					t.Errorf("no refusal says %q; refusals: %q", want, report.Refusals)
				}
			}
			if len(tc.wantRefusals) == 0 && len(report.Refusals) > 0 {
				t.Errorf("want no refusal, got %q", report.Refusals)
			}
			for _, name := range tc.notRefusing {
				if has(report.Refusals, name) {
					t.Errorf("%s is softened, yet a refusal: %q", name, report.Refusals)
				}
			}
			for _, want := range tc.wantChanges {
				if !has(report.RollbackChanges, want) {
					t.Errorf("no rollback change says %q; changes: %q", want, report.RollbackChanges)
				}
			}
			for _, want := range tc.wantNotes {
				if !has(report.Notes, want) {
					t.Errorf("no note says %q; notes: %q", want, report.Notes)
				}
			}
			if tc.wantNotesByMinor != nil {
				minor := kubecompat.Minor
				for _, want := range tc.wantNotesByMinor[minor] {
					if !has(report.Notes, want) {
						t.Errorf("on %s, no note says %q; notes: %q", minor, want, report.Notes)
					}
				}
				if len(tc.wantNotesByMinor[minor]) == 0 && has(report.Notes, "is new in") {
					t.Errorf("on %s, whose first release carries every plugin and field, a note names a newer release: %q", minor, report.Notes)
				}
			}
		})
	}
}
