// Package docs holds the repository's rule that docs are tests: every shell command block of
// README.md and docs/**/*.md (a fenced code block whose info string is sh, bash, shell or
// console) is either run, exactly as written, by a named test with the real tools, or listed
// as not testable here, with the reason. Blocks is that list; docs_test.go checks that it
// accounts for every block, once, and that each test it names exists and uses its block.
//
// Runners take a block's text from Block, never from a copy, and run it with Run: bash with
// errexit, nounset and pipefail, in a mount namespace of its own where temporary directories
// stand in for a node's paths (/etc/kubernetes, /root, ...).
//
// The package imports nothing of Kubernetes: its accounting runs with the unit tests.
package docs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Entry accounts for one command block of a document.
type Entry struct {
	// File is the document, relative to the repository's root.
	File string
	// Key is a substring of the block's text (after dedenting) found in no other block of
	// File; a Key starting with ^ is a prefix of the block's text instead (for a block that
	// another contains whole).
	Key string
	// Test names the test that runs the block as written: "<package dir>.<TestName>", the
	// directory relative to the repository's root. The test's source names Key's constant.
	Test string
	// Untestable is why no test can run the block here; set instead of Test.
	Untestable string
}

// Keys of the blocks the tests run. A test names the constant of each block it runs (its
// source is checked for it).
const (
	// docs/operating.md
	KeyCheckBinary       = "sha256sum --check --ignore-missing SHA256SUMS"
	KeyKubeadmBackup     = "cp /etc/kubernetes/manifests/kube-apiserver.yaml /root/kube-apiserver.yaml.partial"
	KeyKubeadmInstall    = "install -d /etc/kubernetes/patches /etc/kubernetes/portcullis"
	KeyKubeadmJoinRender = "KUBEADM_JOIN_DRYRUN_DIR=/root/portcullis-join-render kubeadm join phase control-plane-prepare control-plane"
	KeyKubeadmPatchCheck = "./kube-apiserver preflight --kubeadm-patches /etc/kubernetes/patches\n"
	KeyWebhooksPreflight = "./kube-apiserver preflight --webhooks --kubeconfig ~/.kube/config"
	KeyKubeadmGetConfig  = "# edit /root/kubeadm-cluster.yaml: add apiServer.extraArgs"
	KeyKubeadmRender     = "cat > /root/kubeadm-node.yaml <<EOF"
	KeyKubeadmUpload     = "^kubeadm init phase upload-config kubeadm --config /root/kubeadm-node.yaml"
	KeyKubeadmCheck      = "kubectl version"
	KeyKubeadmRestart    = "crictl stop --timeout 30 $(crictl ps -q --name kube-apiserver)"
	KeySystemdInstall    = "install -D -m 0755 linux/amd64/kube-apiserver /usr/local/lib/portcullis/"
	KeySystemdBackup     = "install -d -m 0700 /root/portcullis-backup"
	KeySystemdPreflight  = "--running-unit /root/portcullis-backup/kube-apiserver.service"
	KeySystemdRestore    = "cp /root/portcullis-backup/kube-apiserver.service /etc/systemd/system/kube-apiserver.service"
	// 4's systemd rollback: stock of the running version installed, then its check.
	KeySystemdRollbackInstall   = "install -D -m 0755 kubernetes/server/bin/kube-apiserver"
	KeySystemdRollbackPreflight = "--running-environment-file /root/portcullis-rollback/kube-apiserver.env"
	KeySystemdGoingBack         = "--running-environment-file /etc/kubernetes/kube-apiserver.env &&"
	KeySystemdBackupAway        = "mv /root/portcullis-backup /root/portcullis-backup."
	KeyUpgradePatch             = "./kube-apiserver preflight --kubeadm-patches /etc/kubernetes/patches --kubernetes-version \"${NEW%%+*}\""
	// Step 3's blocks, for nodes on cgroup v2 and on cgroup v1 (the flag): the plain node block
	// is a prefix of the other, so its key is the whole line.
	KeyUpgradeApply         = "kubeadm upgrade apply \"${NEW%%+*}\" --patches /etc/kubernetes/patches\n"
	KeyUpgradeNode          = "^kubeadm upgrade node --patches /etc/kubernetes/patches\n"
	KeyUpgradeApplyCgroupV1 = `kubeadm upgrade apply "${NEW%%+*}" --patches /etc/kubernetes/patches --ignore-preflight-errors=SystemVerification`
	KeyUpgradeNodeCgroupV1  = "kubeadm upgrade node --patches /etc/kubernetes/patches --ignore-preflight-errors=SystemVerification"
	KeyUpgradeCertsCheck    = "kubeadm certs check-expiration"
	// The real node is on cgroup v1 (docs/node.md).
	upgradeOnCgroupV2    = "needs nodes on cgroup v2: on this machine's cgroup v1 kubeadm's SystemVerification fails kubeadm upgrade apply and node; the guide's cgroup v1 blocks, the same commands with --ignore-preflight-errors=SystemVerification, run on the real node (test/node.TestKubeadmNodeUpgrade)"
	operatingUpgradeTest = "test/node.TestKubeadmNodeUpgrade"
	KeyRollbackKubeadm   = "mv /etc/kubernetes/patches/kube-apiserver.yaml /root/kube-apiserver-patch.yaml.portcullis"
	KeyRollbackRender    = "grep 'image:' /root/portcullis-render/kube-apiserver.yaml"
	KeyRemoveOurs        = "kubectl delete crd podpresets.settings.k8s.io"
	// The check once every API server of a control plane runs stock, and what mends what it
	// finds.
	KeyHAAPIServicesCheck  = "./kube-apiserver preflight --rollback --kubeconfig /etc/kubernetes/admin.conf"
	KeyHAAPIServicesDelete = "delete apiservice --ignore-not-found v1beta1.policy v1alpha1.admissionregistration.k8s.io"
	KeyReadmePreflight     = "kube-apiserver preflight --manifest /etc/kubernetes/manifests/kube-apiserver.yaml"
	KeyPSPApply            = "kubectl apply -f build/deploy/podsecuritypolicy/privileged.yaml"
	KeyPSPGrantRestrict    = "kubectl -n team-a create role psp:restricted"
	KeyPSPPreflight        = "kube-apiserver preflight --podsecuritypolicy --kubeconfig /etc/kubernetes/admin.conf"
	KeyPSPMigrate          = "kubectl get psp -o yaml > psp.yaml"
	KeyTraceDryRun         = "kubectl annotate --local -f pod.yaml admission.portcullis.io/trace=true"
	KeyWebhookWouldDeny    = "portcullis_admission_webhook_would_deny_total{.*require-owner"
	KeyContainersStorage   = "containers-storage:localhost/portcullis/kube-apiserver"
	KeyEnforcementJQ       = `jq 'select(.annotations["denyserviceexternalips.admission.portcullis.io/would-deny"])`
	runnerPackage          = "test/integration/docs"
	elidedCommandLine      = "an excerpt of a command line (`kube-apiserver ...`): the flags to add to the server's own, not a command"
	// The kubeadm guide runs on a real node: kubeadm's CLI, a kubelet, containerd (make
	// test-node).
	operatingKubeadmTest = "test/node.TestKubeadmNode"
)

// Blocks accounts for every command block of the documentation: one entry a block.
var Blocks = []Entry{
	// README.md
	{File: "README.md", Key: "make run    # a local control plane", Untestable: "make run stays in the foreground until Ctrl-C, and make test is the whole suite (this test among it); test/integration/localup runs make run's program"},
	{File: "README.md", Key: "kubectl --kubeconfig _output/local/admin.kubeconfig get ns", Untestable: "needs make run's control plane in _output/local (test/integration/localup lists namespaces through its admin.kubeconfig)"},
	{File: "README.md", Key: "kube-apiserver ... --enable-admission-plugins=SecurityContextDeny", Untestable: elidedCommandLine},
	{File: "README.md", Key: KeyReadmePreflight, Test: operatingKubeadmTest},

	// docs/ci.md
	{File: "docs/ci.md", Key: "hack/measure-ci.sh --purge-debs", Untestable: "purges Debian packages, then runs .ci/run on empty caches, as long as CI takes; the page's table is its output, and CI runs .ci/run itself"},
	// docs/enforcement-modes.md
	{File: "docs/enforcement-modes.md", Key: "kube-apiserver ... --enable-admission-plugins=...,DenyServiceExternalIPs", Untestable: elidedCommandLine},
	{File: "docs/enforcement-modes.md", Key: KeyEnforcementJQ, Untestable: "reads audit.log, the audit log of a server whose DenyServiceExternalIPs runs in Audit mode"},

	// docs/local-control-plane.md
	{File: "docs/local-control-plane.md", Key: "API_PORT=7443 RUN_DIR=/tmp/pc make run", Untestable: "make run stays in the foreground until Ctrl-C (test/integration/localup runs its program with API_PORT and RUN_DIR)"},

	// docs/operating.md
	{File: "docs/operating.md", Key: KeyCheckBinary, Test: runnerPackage + ".TestOperatingCheckBinary"},
	{File: "docs/operating.md", Key: "./kube-apiserver preflight -- --etcd-servers=https://127.0.0.1:2379 --tls-cert-file=...", Untestable: "`--tls-cert-file=...` is a placeholder: preflight reports the file `...` missing and exits 1"},
	{File: "docs/operating.md", Key: KeyKubeadmBackup, Test: operatingKubeadmTest},
	{File: "docs/operating.md", Key: KeyKubeadmInstall, Test: operatingKubeadmTest},
	{File: "docs/operating.md", Key: KeyKubeadmJoinRender, Test: runnerPackage + ".TestOperatingKubeadm"},
	{File: "docs/operating.md", Key: KeyKubeadmPatchCheck, Test: runnerPackage + ".TestOperatingKubeadm"},
	{File: "docs/operating.md", Key: KeyWebhooksPreflight, Test: runnerPackage + ".TestOperatingKubeadm"},
	{File: "docs/operating.md", Key: KeyKubeadmGetConfig, Test: operatingKubeadmTest},
	{File: "docs/operating.md", Key: KeyKubeadmRender, Test: operatingKubeadmTest},
	{File: "docs/operating.md", Key: KeyKubeadmUpload, Test: operatingKubeadmTest},
	{File: "docs/operating.md", Key: KeyKubeadmCheck, Test: operatingKubeadmTest},
	{File: "docs/operating.md", Key: KeyKubeadmRestart, Test: "test/node.TestKubeadmNodePlugins"},
	{File: "docs/operating.md", Key: KeySystemdInstall, Test: runnerPackage + ".TestOperatingSystemdInstall"},
	{File: "docs/operating.md", Key: KeySystemdBackup, Test: runnerPackage + ".TestOperatingSystemd"},
	{File: "docs/operating.md", Key: KeySystemdPreflight, Test: runnerPackage + ".TestOperatingSystemd"},
	{File: "docs/operating.md", Key: KeySystemdRestore, Test: runnerPackage + ".TestOperatingSystemd"},
	{File: "docs/operating.md", Key: KeySystemdRollbackInstall, Test: runnerPackage + ".TestOperatingSystemdRollback"},
	{File: "docs/operating.md", Key: KeySystemdRollbackPreflight, Test: runnerPackage + ".TestOperatingSystemdRollback"},
	{File: "docs/operating.md", Key: KeySystemdGoingBack, Test: runnerPackage + ".TestOperatingSystemdRollback"},
	{File: "docs/operating.md", Key: KeySystemdBackupAway, Test: runnerPackage + ".TestOperatingSystemd"},
	{File: "docs/operating.md", Key: "systemctl restart kube-apiserver", Untestable: "restarts a live systemd unit and reads its journal: the real node runs the server as a static pod, not under systemd"},
	{File: "docs/operating.md", Key: "kubeadm config images pull --config /root/kubeadm-cluster.yaml", Untestable: "pulls from registry.k8s.io, which this machine cannot reach (the real node imports the images it runs: docs/node.md)"},
	{File: "docs/operating.md", Key: KeyRollbackKubeadm, Test: operatingKubeadmTest},
	{File: "docs/operating.md", Key: KeyRollbackRender, Test: operatingKubeadmTest},
	{File: "docs/operating.md", Key: KeyRemoveOurs, Test: runnerPackage + ".TestPodSecurityPolicyDocs"},
	{File: "docs/operating.md", Key: KeyHAAPIServicesCheck, Test: "test/integration/apiserver.TestHAMixes"},
	{File: "docs/operating.md", Key: KeyHAAPIServicesDelete, Test: "test/integration/apiserver.TestHAMixes"},
	{File: "docs/operating.md", Key: KeyUpgradePatch, Test: runnerPackage + ".TestOperatingUpgrade"},
	{File: "docs/operating.md", Key: KeyUpgradeApply, Untestable: upgradeOnCgroupV2},
	{File: "docs/operating.md", Key: KeyUpgradeNode, Untestable: upgradeOnCgroupV2},
	{File: "docs/operating.md", Key: KeyUpgradeApplyCgroupV1, Test: operatingUpgradeTest},
	{File: "docs/operating.md", Key: KeyUpgradeNodeCgroupV1, Test: operatingUpgradeTest},
	{File: "docs/operating.md", Key: KeyUpgradeCertsCheck, Test: operatingUpgradeTest},

	// docs/plugins/
	{File: "docs/plugins/denyexec.md", Key: "--enable-admission-plugins=DenyEscalatingExec", Untestable: elidedCommandLine},
	{File: "docs/plugins/initializers.md", Key: "--enable-admission-plugins=Initializers", Untestable: elidedCommandLine},
	{File: "docs/plugins/initialresources.md", Key: "--enable-admission-plugins=InitialResources", Untestable: elidedCommandLine},
	{File: "docs/plugins/persistentvolumelabel.md", Key: "--enable-admission-plugins=PersistentVolumeLabel", Untestable: elidedCommandLine},
	{File: "docs/plugins/podpreset.md", Key: "--enable-admission-plugins=PodPreset", Untestable: elidedCommandLine},
	{File: "docs/plugins/podsecuritypolicy.md", Key: KeyPSPApply, Test: runnerPackage + ".TestPodSecurityPolicyDocs"},
	{File: "docs/plugins/podsecuritypolicy.md", Key: KeyPSPGrantRestrict, Test: runnerPackage + ".TestPodSecurityPolicyDocs"},
	{File: "docs/plugins/podsecuritypolicy.md", Key: KeyPSPPreflight, Test: runnerPackage + ".TestPodSecurityPolicyDocs"},
	{File: "docs/plugins/podsecuritypolicy.md", Key: "--enable-admission-plugins=PodSecurityPolicy", Untestable: elidedCommandLine},
	{File: "docs/plugins/podsecuritypolicy.md", Key: KeyPSPMigrate, Test: runnerPackage + ".TestPodSecurityPolicyDocs"},
	{File: "docs/plugins/securitycontextdeny.md", Key: "--enable-admission-plugins=SecurityContextDeny", Untestable: elidedCommandLine},

	// docs/release.md
	{File: "docs/release.md", Key: "make verify-release", Untestable: "builds the release twice, both platforms (a cold compile of the second platform's graph); CI runs it for linux/amd64, beside make test-minors, and the release procedure as shown"},
	{File: "docs/release.md", Key: KeyContainersStorage, Test: "test/release.TestSkopeoCopiesToContainersStorage"},
	{File: "docs/release.md", Key: "docker://registry.example.com/portcullis/kube-apiserver", Untestable: "pushes to registry.example.com, the placeholder for the operator's registry"},

	// docs/troubleshooting.md
	{File: "docs/troubleshooting.md", Key: KeyTraceDryRun, Test: runnerPackage + ".TestPodSecurityPolicyDocs"},

	// docs/webhooks.md
	{File: "docs/webhooks.md", Key: "go test -count=1 ./test/integration/webhook/...", Untestable: "runs the webhook suite, which make test-integration runs itself"},
	{File: "docs/webhooks.md", Key: KeyWebhookWouldDeny, Untestable: "needs the require-owner webhook of the page's rollout, in Audit mode, and pods it denies"},
}

// CommandInfo are the info strings of the blocks accounted for.
var CommandInfo = []string{"sh", "bash", "shell", "console"}

// CodeBlock is a fenced code block of a document.
type CodeBlock struct {
	// File is the document, relative to the repository's root.
	File string
	// Line is the line of the opening fence, from 1.
	Line int
	// Info is the first word of the info string.
	Info string
	// Text is the block's content with the fence's indentation removed from each line, every
	// line ending in a newline.
	Text string
}

var openingFence = regexp.MustCompile("^( *)(`{3,}|~{3,})[ \t]*([^ \t`]*)")

// Parse returns the fenced code blocks of a Markdown document. A fence may be indented (in a
// list item): its indentation is removed from the block's lines, as Markdown does.
func Parse(file string, data []byte) []CodeBlock {
	lines := strings.Split(string(data), "\n")
	var blocks []CodeBlock
	for i := 0; i < len(lines); i++ {
		m := openingFence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, fence, info := len(m[1]), m[2], m[3]
		block := CodeBlock{File: file, Line: i + 1, Info: info}
		var text strings.Builder
		for i++; i < len(lines); i++ {
			if isClosingFence(lines[i], fence) {
				break
			}
			text.WriteString(dedent(lines[i], indent))
			text.WriteByte('\n')
		}
		block.Text = text.String()
		blocks = append(blocks, block)
	}
	return blocks
}

func isClosingFence(line, fence string) bool {
	trimmed := strings.TrimLeft(line, " ")
	run := len(trimmed) - len(strings.TrimLeft(trimmed, fence[:1]))
	return run >= len(fence) && strings.TrimSpace(trimmed[run:]) == ""
}

// dedent removes up to n leading spaces.
func dedent(line string, n int) string {
	for i := 0; i < n && strings.HasPrefix(line, " "); i++ {
		line = line[1:]
	}
	return line
}

// Matches reports whether a block's text holds key: contains it, or, for a key starting with
// ^, starts with the rest.
func Matches(text, key string) bool {
	if prefix, ok := strings.CutPrefix(key, "^"); ok {
		return strings.HasPrefix(text, prefix)
	}
	return strings.Contains(text, key)
}

// IsCommand reports whether a block is a command block (sh, bash, shell or console).
func (b CodeBlock) IsCommand() bool { return slices.Contains(CommandInfo, b.Info) }

// Documents returns README.md and every docs/**/*.md, relative to root, sorted.
func Documents(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files[1:])
	return files, err
}

// CommandBlocks returns the command blocks of every document under root.
func CommandBlocks(root string) ([]CodeBlock, error) {
	files, err := Documents(root)
	if err != nil {
		return nil, err
	}
	var out []CodeBlock
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, b := range Parse(f, data) {
			if b.IsCommand() {
				out = append(out, b)
			}
		}
	}
	return out, nil
}

// RepoRoot returns the repository's root: the nearest directory above the working directory
// holding go.mod and VERSION.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if isFile(filepath.Join(dir, "go.mod")) && isFile(filepath.Join(dir, "VERSION")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no repository root (go.mod and VERSION) above the working directory")
		}
		dir = parent
	}
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// Block returns the text of the command block of file (relative to the repository's root)
// that contains key, exactly as the document has it (dedented). It fails the test unless
// exactly one command block of file contains key.
func Block(t testing.TB, file, key string) string {
	t.Helper()
	root := RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var found []CodeBlock
	for _, b := range Parse(file, data) {
		if b.IsCommand() && Matches(b.Text, key) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d command blocks contain %q, want exactly 1", file, len(found), key)
	}
	return found[0].Text
}

// Options say where and how Run runs a script.
type Options struct {
	// Mounts maps a path of the node (/etc/kubernetes, /root, ...) to the directory that
	// stands in for it: a bind mount in the script's own mount namespace, which nothing
	// outside sees. A missing mount point is created for the run and removed afterwards. No
	// path may be under another.
	Mounts map[string]string
	// Path lists directories searched before the system's for the script's commands (the
	// real tools under test: kubeadm, kubectl, kube-apiserver).
	Path []string
	// Dir is the working directory.
	Dir string
	// Env are variables set besides PATH and HOME (/root), as KEY=value. Nothing else of the
	// test's environment is passed on.
	Env []string
	// Hostname, if set, is the host name inside the run (a UTS namespace of its own).
	Hostname string
	// Stdin is what the script reads: an operator's answers to a command's prompt.
	Stdin string
	// Node, if set, is the PID (as the host sees it) of a real node's init (test/node): the
	// run enters its mount, UTS, network and PID namespaces first, so that it sees the node's
	// /etc/kubernetes, /root and /run, its host name and its network, as an operator logged
	// in to the node would.
	Node int
}

// systemPath follows Options.Path in the script's PATH.
const systemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Run runs script with bash -o errexit -o nounset -o pipefail, in a private mount namespace
// set up as opts say, and returns its standard output and error. A non-zero exit fails the
// test, with both.
func Run(t testing.TB, script string, opts Options) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, err := Exec(t, script, opts)
	if err != nil {
		t.Fatalf("%v; the script:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, stdout, stderr)
	}
	return stdout, stderr
}

// runs serializes the runs of a test binary: the mount points they create on the host are
// removed after each.
var runs sync.Mutex

// Exec is Run returning the script's failure (an *exec.ExitError for a non-zero exit) instead
// of failing the test; it fails the test only when the run cannot be set up.
func Exec(t testing.TB, script string, opts Options) (stdout, stderr string, err error) {
	t.Helper()
	runs.Lock()
	defer runs.Unlock()

	dir := t.TempDir()
	scriptFile := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(scriptFile, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	targets := make([]string, 0, len(opts.Mounts))
	for target := range opts.Mounts {
		if !filepath.IsAbs(target) {
			t.Fatalf("mount point %q is not absolute", target)
		}
		targets = append(targets, filepath.Clean(target))
	}
	sort.Strings(targets)
	for i := 1; i < len(targets); i++ {
		if strings.HasPrefix(targets[i], targets[i-1]+"/") {
			t.Fatalf("mount point %s is under %s", targets[i], targets[i-1])
		}
	}

	var wrapper strings.Builder
	wrapper.WriteString("set -o errexit -o nounset -o pipefail\n")
	for _, target := range targets {
		created, err := makeMountPoint(target)
		if err != nil {
			t.Fatal(err)
		}
		defer removeAll(created)
		fmt.Fprintf(&wrapper, "mount --bind %s %s\n", quote(opts.Mounts[target]), quote(target))
	}
	if opts.Hostname != "" {
		fmt.Fprintf(&wrapper, "hostname %s\n", quote(opts.Hostname))
	}
	if opts.Dir != "" {
		fmt.Fprintf(&wrapper, "cd %s\n", quote(opts.Dir))
	}
	fmt.Fprintf(&wrapper, "exec bash -o errexit -o nounset -o pipefail %s\n", quote(scriptFile))
	wrapperFile := filepath.Join(dir, "namespace.sh")
	if err := os.WriteFile(wrapperFile, []byte(wrapper.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	args := []string{"unshare", "--mount", "--propagation", "private"}
	if opts.Hostname != "" {
		args = append(args, "--uts")
	}
	args = append(args, "bash", wrapperFile)
	if opts.Node != 0 {
		args = append([]string{"nsenter", fmt.Sprintf("--target=%d", opts.Node), "--mount", "--uts", "--net", "--pid", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	path := strings.Join(append(slices.Clone(opts.Path), systemPath), ":")
	cmd.Env = append([]string{"PATH=" + path, "HOME=/root"}, opts.Env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Stdin = strings.NewReader(opts.Stdin)
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("unshare (a mount namespace needs root): %v\n%s", err, errOut.Bytes())
	}
	return out.String(), errOut.String(), err
}

// makeMountPoint creates path's missing directories and returns the topmost one it created
// ("" when path existed).
func makeMountPoint(path string) (string, error) {
	top := ""
	for p := path; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		top = p
	}
	if top == "" {
		return "", nil
	}
	return top, os.MkdirAll(path, 0o755)
}

// removeAll removes the empty directories makeMountPoint created: nothing is written into a
// mount point outside the namespace.
func removeAll(top string) {
	if top == "" {
		return
	}
	var dirs []string
	_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i]) // only empty ones go
	}
}

// quote quotes s for bash.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
