package docs_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-k8s/portcullis/test/docs"
)

const pspPage = "docs/plugins/podsecuritypolicy.md"

// pspServerConfig serves policy/v1beta1 (PodSecurityPolicy's API, before the plugin is
// enabled) and traces admission on request.
const pspServerConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: Portcullis
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: PortcullisConfiguration
    servedAPIs: [policy/v1beta1]
    admissionTrace: {onRequest: true}
`

// TestPodSecurityPolicyDocs runs, against a server serving policy/v1beta1 with PodPreset
// enabled: docs/plugins/podsecuritypolicy.md's steps 2 and 3 and its migration (on one
// cluster, both sides), docs/troubleshooting.md's traced dry run, and last docs/operating.md's
// removal of what Portcullis leaves in etcd.
func TestPodSecurityPolicyDocs(t *testing.T) {
	configFile := filepath.Join(t.TempDir(), "admission-config.yaml")
	writeFile(t, configFile, pspServerConfig)
	n := newNode(t, nil)
	n.startServer(t, nil, "--enable-admission-plugins=PodPreset", "--admission-control-config-file="+configFile)
	n.writeAdminConf(t)
	ctx := context.Background()
	// What kube-controller-manager would have made: the namespace's default service account.
	for _, ns := range []string{"default", "team-a"} {
		if ns != "default" {
			if _, err := n.server.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := n.server.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Step 2: the policies and grants, then restricted for team-a.
	n.run(t, pspPage, docs.KeyPSPApply)
	policies, err := n.server.Client.PolicyV1().RESTClient().Get().AbsPath("/apis/policy/v1beta1/podsecuritypolicies").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"privileged", "baseline", "restricted"} {
		if !strings.Contains(string(policies), `"name":"`+name+`"`) {
			t.Errorf("no PodSecurityPolicy %s after the apply: %s", name, policies)
		}
	}
	n.run(t, pspPage, docs.KeyPSPGrantRestrict)
	if _, err := n.server.Client.RbacV1().RoleBindings("team-a").Get(ctx, "default:psp:restricted", metav1.GetOptions{}); err != nil {
		t.Errorf("the RoleBinding of team-a: %v", err)
	}

	// Step 3: what the plugin would do with the cluster's workloads.
	out, _ := n.run(t, pspPage, docs.KeyPSPPreflight)
	if strings.TrimSpace(out) == "" {
		t.Error("preflight --podsecuritypolicy printed nothing")
	}

	// The migration, exported and applied again.
	n.run(t, pspPage, docs.KeyPSPMigrate)
	if exported := string(docs.ReadFile(t, filepath.Join(n.work, "psp.yaml"))); !strings.Contains(exported, "kind: PodSecurityPolicy") {
		t.Errorf("psp.yaml holds no PodSecurityPolicy:\n%s", exported)
	}

	// docs/troubleshooting.md: a traced dry run of pod.yaml.
	writeFile(t, filepath.Join(n.work, "pod.yaml"), `apiVersion: v1
kind: Pod
metadata:
  name: traced
  namespace: default
spec:
  containers:
  - name: app
    image: registry.example.com/app:1
`)
	_, stderr := n.run(t, "docs/troubleshooting.md", docs.KeyTraceDryRun)
	if !strings.Contains(stderr, "admission trace: mutating") || !strings.Contains(stderr, "admission trace: validating") {
		t.Errorf("the dry run printed no admission trace:\n%s", stderr)
	}
	if _, err := n.server.Client.CoreV1().Pods("default").Get(ctx, "traced", metav1.GetOptions{}); err == nil {
		t.Error("the dry run stored the pod")
	}

	// docs/operating.md: leave nothing of ours behind.
	n.run(t, docs.Operating, docs.KeyRemoveOurs)
	if backup := string(docs.ReadFile(t, filepath.Join(n.work, "psp-backup.yaml"))); !strings.Contains(backup, "name: restricted") {
		t.Errorf("psp-backup.yaml lacks the policies:\n%s", backup)
	}
	docs.ReadFile(t, filepath.Join(n.work, "podpreset-backup.yaml"))
	policies, err = n.server.Client.PolicyV1().RESTClient().Get().AbsPath("/apis/policy/v1beta1/podsecuritypolicies").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(policies), `"name":"restricted"`) {
		t.Errorf("PodSecurityPolicies remain after the removal: %s", policies)
	}
}
