package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// InlineEntry accounts for one inline command line of a document: a code span outside the
// command blocks that holds a command an operator could type, a program of the tools the
// docs use and at least one argument (InlineCommands finds them; a span that only names a
// command, `kubeadm upgrade apply`, is in CommandNames instead). Either the same command is
// in a command block (Block: that block's key in Blocks, which says how it runs), or NotRun
// says why the span is not run as written.
type InlineEntry struct {
	// File is the document; Text the span's text exactly.
	File, Text string
	// Block is the key of the command block of Blocks (in any document) whose text holds
	// Text, its trailing placeholder ("…") left out.
	Block string
	// NotRun is why the span is not a command to run as written.
	NotRun string
}

// CommandNames are the spans the documentation uses to name a command (its program and
// subcommands), in any document: names, not steps. Any other span of a program and an
// argument is a command line, accounted for in Inline.
var CommandNames = []string{
	"kube-apiserver preflight",
	"kubeadm config images list",
	"kubeadm init",
	"kubeadm init phase",
	"kubeadm init phase control-plane apiserver",
	"kubeadm join",
	"kubeadm upgrade",
	"kubeadm upgrade apply",
	"kubeadm upgrade plan",
	"kubectl api-resources",
	"kubectl apply",
	"kubectl attach",
	"kubectl certificate approve",
	"kubectl debug",
	"kubectl edit",
	"kubectl exec",
	"kubectl replace",
	"promtool check rules",
	"promtool test rules",
	"skopeo inspect",
	"systemd-analyze verify",
}

// Inline accounts for every inline command line of the documentation.
var Inline = []InlineEntry{
	{File: "README.md", Text: "kube-apiserver --version", NotRun: "what make build's binary answers, in the table of make targets; test/integration/apiserver and test/release run the binary with --version and check the answer"},
	{File: "docs/node.md", Text: "ctr -n k8s.io images import", NotRun: "names how the real node's harness loads its images (test/node does it), not an operator's step"},
	{File: "docs/node.md", Text: "curl http://…", NotRun: "the exec handlers of conformance's pods, which they run on the real node (… is their URL)"},
	{File: "docs/node.md", Text: "kubectl version", Block: KeyKubeadmCheck},
	{File: "docs/node.md", Text: "kubeadm upgrade node", Block: KeyUpgradeNodeCgroupV1},
	{File: "docs/node.md", Text: "kubeadm certs check-expiration", Block: KeyUpgradeCertsCheck},
	{File: "docs/node.md", Text: "kubeadm join phase control-plane-prepare control-plane --dry-run", NotRun: "names the render of docs/operating.md's step 6 block (its --config elided here), which test/node.TestKubeadmNode runs on the real node"},
	{File: "docs/operating.md", Text: "skopeo copy --all oci-archive:kube-apiserver-v1.37.2+portcullis.1.oci.tar docker://registry.example.com/portcullis/kube-apiserver:v1.37.2_portcullis.1", Block: "docker://registry.example.com/portcullis/kube-apiserver"},
	{File: "docs/operating.md", Text: "crictl ps --name kube-apiserver", NotRun: "a look at the runtime while the kubelet restarts the pod, nothing to check in its output; the real node (test/node) waits for the same container through its own CRI client"},
	{File: "docs/operating.md", Text: "kubeadm join --control-plane", NotRun: "names kubeadm's join of another control-plane node: its arguments (endpoint, token, CA hash, certificate key) are the cluster's, printed by kubeadm init"},
	{File: "docs/operating.md", Text: "journalctl -f", NotRun: "the form the page warns against (it never returns)"},
	{File: "docs/operating.md", Text: "kubectl get --raw /readyz", Block: KeyKubeadmCheck},
	{File: "docs/operating.md", Text: `kubectl get … \| kubectl replace`, NotRun: "names a kind of stock-side maintenance (… is the resource), not a step of this guide"},
	{File: "docs/operating.md", Text: "kubectl get --raw /apis", NotRun: "names legacy discovery in a table of what clients see; test/integration/apiserver.TestHAMixes reads it through client-go"},
	{File: "docs/operating.md", Text: "kubeadm upgrade node --patches …", Block: KeyUpgradeNodeCgroupV1},
	{File: "docs/operating.md", Text: "kubectl edit pod NAME -n NAMESPACE", NotRun: "opens an editor; NAME and NAMESPACE are a pending pod's, left from an Initializers configuration at a rollback"},
	{File: "docs/operating.md", Text: "kubeadm upgrade node", NotRun: "a worker node's upgrade (and the name of the command): as for stock, with no patch, since no API server runs on a worker; the real node is a single control plane, whose kubeadm upgrade node --patches … blocks test/node.TestKubeadmNodeUpgrade runs"},
	{File: "docs/operating.md", Text: "kubeadm upgrade apply vX", NotRun: "vX is a placeholder, in the description of --kubernetes-version: 5. Upgrading's blocks run kubeadm upgrade apply with the release's version"},
	{File: "docs/operating.md", Text: "systemctl cat kube-apiserver", NotRun: "reads the node's own unit through systemd, which runs no kube-apiserver here: the systemd tests stand directories in for systemd's (test/integration/docs.TestOperatingSystemd)"},
	{File: "docs/operating.md", Text: "systemctl edit kube-apiserver", NotRun: "opens an editor on a live unit's drop-in; TestOperatingSystemd writes a drop-in where it writes one and checks that step 2's backup keeps it"},
	{File: "docs/operating.md", Text: "crictl images", NotRun: "a look at the node's images, nothing to check in its output; test/node imports the real node's images itself (ctr), and its pods run from them"},
	{File: "docs/operating.md", Text: "kubectl version", Block: KeyKubeadmCheck},
	{File: "docs/operating.md", Text: "kubectl get psp", Block: KeyPSPMigrate},
	{File: "docs/plugins/initializers.md", Text: "kubectl get pods -l '!initializer.admission.portcullis.io/uninitialized'", NotRun: "a label selector shown in prose: the label is the plugin's UninitializedLabel, which test/integration/apiserver.TestInitializers checks on every gated pod"},
	{File: "docs/plugins/persistentvolumelabel.md", Text: `kubectl get pv pv-1 -o json | jq 'del(.metadata.labels, .metadata.resourceVersion, .metadata.uid, .spec.claimRef, .spec.nodeAffinity) | .metadata.name += "-check"' | kubectl create --dry-run=server -o yaml -f -`, NotRun: "needs a cluster's PersistentVolume pv-1 labelled by the operator's own webhook; the dry-run create of a copy is what test/integration/apiserver.TestPersistentVolumeLabel's migration case does through client-go"},
	{File: "docs/plugins/persistentvolumelabel.md", Text: "kubectl create --dry-run=server", NotRun: "names a server-side dry run"},
	{File: "docs/plugins/podsecuritypolicy.md", Text: "kubectl auth can-i use podsecuritypolicy/baseline --as=system:serviceaccount:team-a:default -n team-a", NotRun: "a look at a grant the page's blocks make; TestPodSecurityPolicyDocs shows it through the team's pods the plugin admits with that policy"},
	{File: "docs/plugins/podsecuritypolicy.md", Text: "kube-apiserver preflight --podsecuritypolicy", Block: KeyPSPPreflight},
	{File: "docs/plugins/podpreset.md", Text: "kubectl get podpresets", NotRun: "names what kubectl does with the API, in prose; test/integration/apiserver.TestPodPreset makes the same list through client-go"},
	{File: "docs/plugins/podpreset.md", Text: "kubectl explain podpreset.spec", NotRun: "names what kubectl reads, in prose; test/integration/apiserver.TestPodPreset checks the OpenAPI schema kubectl explain reads"},
	{File: "docs/plugins/podsecuritypolicy.md", Text: "kubectl get psp -o yaml", Block: KeyPSPMigrate},
	{File: "docs/plugins/podsecuritypolicy.md", Text: "kubectl get psp", Block: KeyPSPMigrate},
	{File: "docs/plugins/podsecuritypolicy.md", Text: "kubectl explain psp.spec", NotRun: "names what kubectl reads, in a table; test/integration/apiserver.TestPodSecurityPolicy checks the OpenAPI v3 document kubectl explain reads"},
	{File: "docs/registry.md", Text: "cp VERSION releases/1.37/VERSION", NotRun: "a maintainer's step of the first release of a new minor, on a repository at that point; make verify checks what it leaves (each minor's VERSION against its pins)"},
	{File: "docs/release.md", Text: "kubeadm config images list --kubernetes-version v1.37.2+portcullis.1 --image-repository registry.example.com/portcullis", NotRun: "names the image kubeadm lists for the release; test/release's deploy test runs kubeadm's command with the release's version and a repository (kubeadmAPIServerImage)"},
	{File: "docs/release.md", Text: "kube-apiserver preflight --kubeadm-patches DIR [--kubernetes-version vX]", NotRun: "DIR and vX are placeholders: docs/operating.md's blocks run it (2a step 3, 5. Upgrading)"},
	{File: "docs/release.md", Text: "kubeadm config images list --kubernetes-version <VERSION> --image-repository localhost/portcullis", NotRun: "<VERSION> is a placeholder: test/release's image test runs kubeadm's command with the release's version (kubeadmAPIServerImage)"},
	{File: "docs/release.md", Text: "sha256sum -c", NotRun: "names the format of SHA256SUMS; docs/operating.md's check runs sha256sum --check on it"},
	{File: "docs/release.md", Text: "kube-apiserver preflight --systemd-unit", Block: KeySystemdPreflight},
	{File: "docs/troubleshooting.md", Text: "kube-apiserver preflight --manifest …", Block: KeyReadmePreflight},
	{File: "docs/troubleshooting.md", Text: "kubectl get psp", Block: KeyPSPMigrate},
	{File: "docs/troubleshooting.md", Text: "kubeadm join --control-plane", NotRun: "names kubeadm's join of another control-plane node: its arguments are the cluster's"},
	{File: "docs/webhooks.md", Text: "kubectl get --raw /metrics | grep portcullis_admission_webhook_breaker_state", NotRun: "needs the page's scenario, a webhook scaled to zero behind its Service; test/integration/webhook's dispatch suite reads the same gauge from the server's /metrics"},
	{File: "docs/webhooks.md", Text: "kubectl --request-timeout=2s", NotRun: "names a client's timeout, to say what margin it gets"},
	{File: "docs/webhooks.md", Text: "kube-apiserver preflight --webhooks --kubeconfig FILE", NotRun: "FILE is a placeholder: docs/operating.md's block (Webhooks before the swap) runs it with a kubeconfig"},
	{File: "docs/webhooks.md", Text: "kubectl create --dry-run=server", NotRun: "names a server-side dry run, in a table of what test/integration/webhook checks"},
}

// inlineCommand is an inline command line: a program of the tools the docs use, then an
// argument; what CommandNames lists is a name instead.
var (
	inlineCommand = regexp.MustCompile(`^(\./)?(kubectl|kubeadm|systemctl|journalctl|crictl|kube-apiserver|skopeo|curl|sha256sum|ctr|systemd-analyze|promtool|cp|mv|install|sed|rm) \S`)
	codeSpan      = regexp.MustCompile("`([^`]+)`")
)

// InlineSpan is an inline command line of a document.
type InlineSpan struct {
	File string
	Line int
	Text string
}

// InlineCommands returns the inline command lines of every document under root: code spans
// outside fenced blocks, within a paragraph (a span may wrap onto the next line, read as one
// space), that inlineCommand matches and CommandNames does not list.
func InlineCommands(root string) ([]InlineSpan, error) {
	spans, err := commandSpans(root)
	return slices.DeleteFunc(spans, func(s InlineSpan) bool { return slices.Contains(CommandNames, s.Text) }), err
}

// commandSpans returns the code spans of every document under root that inlineCommand
// matches, names included.
func commandSpans(root string) ([]InlineSpan, error) {
	files, err := Documents(root)
	if err != nil {
		return nil, err
	}
	var out []InlineSpan
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		// The text outside fenced blocks, a paragraph (its first line, its text) at a time.
		fence, start := "", 0
		var paragraph []string
		flush := func() {
			text := strings.Join(paragraph, "\n")
			for _, loc := range codeSpan.FindAllStringSubmatchIndex(text, -1) {
				span := strings.Join(strings.Fields(text[loc[2]:loc[3]]), " ")
				if inlineCommand.MatchString(span) {
					out = append(out, InlineSpan{File: f, Line: start + strings.Count(text[:loc[0]], "\n") + 1, Text: span})
				}
			}
			paragraph = nil
		}
		for i, line := range strings.Split(string(data), "\n") {
			switch {
			case fence != "":
				if isClosingFence(line, fence) {
					fence = ""
				}
				continue
			case openingFence.MatchString(line):
				flush()
				fence = openingFence.FindStringSubmatch(line)[2]
				continue
			case strings.TrimSpace(line) == "":
				flush()
				continue
			}
			if len(paragraph) == 0 {
				start = i
			}
			paragraph = append(paragraph, line)
		}
		flush()
	}
	return out, nil
}

// SameCommand reports whether a command block's text holds an inline command: each with its
// line continuations joined and its spaces collapsed, the inline one without a trailing
// placeholder (…, ...).
func SameCommand(block, inline string) bool {
	normalize := func(s string) string {
		return strings.Join(strings.Fields(strings.ReplaceAll(s, "\\\n", " ")), " ")
	}
	inline = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(inline), "…"), "..."))
	return inline != "" && strings.Contains(normalize(block), normalize(inline))
}
