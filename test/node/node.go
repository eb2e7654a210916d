// Package node is the real node the suite runs: containerd, runc and the CNI plugins built
// from the module proxy, a kubelet built from upstream's module graph, kubeadm's CLI, and
// images built here from the binaries the suite built. The node is a set of namespaces of its
// own (nodeinit is its PID 1): one node at a time per machine, every process, mount, network
// device and cgroup it made removed when it stops, also after a failure, and the kernel
// settings the kubelet changes put back; a node a killed run left is cleared before the next
// starts.
package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	imageutils "k8s.io/kubernetes/test/utils/image"

	"github.com/portcullis-k8s/portcullis/test/docs"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
	"github.com/portcullis-k8s/portcullis/test/node/image"
)

const (
	// Hostname is the node's host name, and so kubeadm's node name.
	Hostname = "portcullis-node"
	// The node's network: a veth pair, the host's end HostAddress, the node's NodeAddress
	// (its default route goes to the host, so kubeadm advertises NodeAddress). The host
	// reaches the API server at NodeAddress:6443.
	HostAddress = "10.200.0.1"
	NodeAddress = "10.200.0.2"
	hostVeth    = "portcullis0"
	// PodSubnet is the bridge plugin's range (the node's pods).
	PodSubnet = "10.244.0.0/24"
	// CgroupRoot is the kubelet's cgroupRoot (nodeinit makes it, and removes it after).
	CgroupRoot = "/portcullis-node"
	// nodeLock is nodeinit's Lock.
	nodeLock = "/run/portcullis-node-host/lock"

	// DirEnv names the directory the node lives in (make test-node: _output/node): its
	// runtime under runtime/bin, each minor's image of our kube-apiserver
	// (kube-apiserver-<minor>.oci.tar, make node-image) and each older minor's release kit
	// (deploy-<minor>, make node-kit).
	DirEnv = "PORTCULLIS_NODE_DIR"

	// AdminConf is kubeadm's admin kubeconfig, as the node sees it.
	AdminConf = "/etc/kubernetes/admin.conf"
)

// Release is one supported minor's Portcullis release, as the node installs it.
type Release struct {
	Minor string
	// Version is Portcullis's (v1.36.5+portcullis.1), KubernetesVersion the Kubernetes release
	// it is built on.
	Version, KubernetesVersion string
	// Bins are the minor's binaries: ours and stock's kube-apiserver, the other control-plane
	// components, etcd, kubeadm, the kubelet and CoreDNS.
	Bins framework.Binaries
	// Kit is the release's deploy kit (its deploy/: build/deploy for the newest minor); Image
	// our kube-apiserver's OCI image.
	Kit, Image string
}

// Releases are the supported minors' releases, oldest first (releases/minors).
func Releases(t *testing.T) []Release {
	t.Helper()
	minors := framework.SupportedMinors(t)
	releases := make([]Release, len(minors))
	for i, minor := range minors {
		releases[i] = release(t, minor, i == len(minors)-1)
	}
	return releases
}

// Newest is the newest supported minor's release, the default build.
func Newest(t *testing.T) Release {
	t.Helper()
	minors := framework.SupportedMinors(t)
	return release(t, minors[len(minors)-1], true)
}

// NextRelease is the newest minor's next Portcullis release on the same Kubernetes release
// (v1.N.P+portcullis.M+1), as make node-next-release builds it from this source under DirEnv:
// what an upgrade within one patch installs. Its kube-apiserver (Bins.APIServer, outside
// Bins.Dir), image and kit are its own; the other binaries are Newest's, as in such a release.
func NextRelease(t *testing.T) Release {
	t.Helper()
	r := Newest(t)
	dir := filepath.Join(os.Getenv(DirEnv), "next-release")
	r.Bins.APIServer, r.Kit, r.Image = filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "deploy"), filepath.Join(dir, "kube-apiserver.oci.tar")
	for _, path := range []string{r.Bins.APIServer, r.Kit, r.Image} {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("the next release for the node: %v (make node-next-release builds it; make test-node does unless NODE_UPGRADE is empty)", err)
		}
	}
	// Exactly the next number: a copy left by an older VERSION would make the upgrade a
	// downgrade, or no change at all.
	version := strings.TrimSpace(string(docs.ReadFile(t, filepath.Join(dir, "VERSION"))))
	base, number, _ := strings.Cut(r.Version, "+portcullis.")
	n, err := strconv.Atoi(number)
	if err != nil {
		t.Fatalf("the newest release, %s, is not v1.N.P+portcullis.M", r.Version)
	}
	if want := fmt.Sprintf("%s+portcullis.%d", base, n+1); version != want {
		t.Fatalf("%s holds %s, want %s (the release after %s): run make node-next-release", dir, version, want, r.Version)
	}
	r.Version = version
	return r
}

// release is minor's release: the newest's binaries where make test-node puts the default
// build's, the others' under _output/<minor>/bin, and their kits under DirEnv.
func release(t *testing.T, minor string, newest bool) Release {
	t.Helper()
	root, dir := docs.RepoRoot(t), os.Getenv(DirEnv)
	if dir == "" {
		t.Fatalf("$%s is not set: run make test-node", DirEnv)
	}
	r := Release{Minor: minor, Image: filepath.Join(dir, "kube-apiserver-"+minor+".oci.tar")}
	versionFile := filepath.Join(root, "releases", minor, "VERSION")
	if newest {
		versionFile, r.Bins, r.Kit = filepath.Join(root, "VERSION"), framework.FindBinaries(t), filepath.Join(root, "build", "deploy")
	} else {
		r.Bins, r.Kit = framework.BinariesIn(t, filepath.Join(root, "_output", minor, "bin")), filepath.Join(dir, "deploy-"+minor)
	}
	r.Version = strings.TrimSpace(string(docs.ReadFile(t, versionFile)))
	r.KubernetesVersion, _, _ = strings.Cut(r.Version, "+")
	for _, path := range []string{r.Image, r.Kit, filepath.Join(r.Bins.Dir, "kubelet"), filepath.Join(r.Bins.Dir, "kube-scheduler")} {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s's release for the node: %v (make test-node builds the newest minor's, and the older ones' unless NODE_UPGRADE is empty)", minor, err)
		}
	}
	return r
}

// KitFile is the release's copy of a file of build/deploy (a path from the repository's root).
func (r Release) KitFile(path string) string {
	return filepath.Join(r.Kit, strings.TrimPrefix(path, "build/deploy/"))
}

// Node is a running node.
type Node struct {
	// Dir is the node's directory: one directory per node path (nodeinit.NodePaths), bin/
	// (first on the node's PATH), logs/, images/.
	Dir string
	// PID is nodeinit's, as the host sees it.
	PID int
	// Bins are the suite's binaries (the newest minor's: nodeinit, pause, kubectl, agnhost);
	// Release the release the node was installed with or last upgraded to. Work is the
	// operator's working directory on the node: ./kube-apiserver (the release's) and
	// build/deploy/ (its kit), as the guide has them.
	Bins    framework.Binaries
	Release Release
	Work    string
	// coreDNS is whether the node runs kubeadm's DNS addon, and so imports CoreDNS's image
	// at each upgrade.
	coreDNS bool
	// PauseImage is the sandbox image (kubeadm's), which every node has.
	PauseImage string

	root     string // DirEnv
	cmd      *exec.Cmd
	lockFile *os.File
	signals  chan os.Signal
	// stopping serializes stop: the test's cleanup and an interrupt.
	stopping sync.Mutex
}

// Start starts a node for release rel: its namespaces, network and containerd, with the
// images rel's kubeadm asks for imported (CoreDNS's with coreDNS, for kubeadm's DNS addon).
// Stop is registered as a cleanup.
func Start(t *testing.T, rel Release, coreDNS bool) *Node {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the real node runs as root: run make test-node as root")
	}
	root := os.Getenv(DirEnv)
	if root == "" {
		t.Fatalf("$%s is not set: run make test-node", DirEnv)
	}
	n := &Node{root: root, Dir: filepath.Join(root, "run"), Bins: framework.FindBinaries(t), Release: rel, coreDNS: coreDNS}
	n.checkPaths(t)
	n.lock(t)
	// A node a killed run left, and what it left on the host, go first.
	n.hostCommand(t, "-clean", "-veth", hostVeth)
	if err := os.RemoveAll(n.Dir); err != nil {
		t.Fatal(err)
	}
	n.hostCommand(t, append([]string{"-prepare"}, nodePaths...)...)
	n.stopOnSignal()
	t.Cleanup(func() { n.Stop(t) })
	if err := os.MkdirAll(filepath.Join(n.Dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	images := n.kubeadmImages(t, rel, coreDNS)
	n.PauseImage = images["pause"]
	WriteFile(t, filepath.Join(n.Dir, "etc-containerd", "config.toml"), containerdConfig(n.PauseImage))
	n.layOut(t)
	n.startInit(t)
	n.startNetwork(t)
	n.Run(t, "systemctl start containerd")
	n.WaitFor(t, "containerd's socket", 2*time.Minute, func() error {
		_, _, err := n.Exec(t, "test -S /run/containerd/containerd.sock && ctr version >/dev/null 2>&1")
		return err
	})
	n.importImages(t, rel, images)
	return n
}

// Upgrade installs rel on the node as an operator does before kubeadm upgrade: its kubeadm
// first on the PATH, its binary and kit in the working directory (the new release's
// directory), and the images its kubeadm asks for (CoreDNS's when the node was started with
// it) in containerd, as a pull would leave them. The kubelet is UpgradeKubelet's.
func (n *Node) Upgrade(t *testing.T, rel Release) {
	t.Helper()
	n.Release = rel
	n.link(t, map[string]string{"kubeadm": rel.Bins.Kubeadm, "kube-apiserver": rel.Bins.APIServer})
	n.layOutWork(t)
	n.importImages(t, rel, n.kubeadmImages(t, rel, n.coreDNS))
}

// UpgradeKubelet puts rel's kubelet in place and restarts it, as kubeadm's upgrade guide
// says after kubeadm upgrade.
func (n *Node) UpgradeKubelet(t *testing.T, rel Release) {
	t.Helper()
	n.link(t, map[string]string{"kubelet": filepath.Join(rel.Bins.Dir, "kubelet")})
	n.Run(t, "systemctl daemon-reload && systemctl restart kubelet")
}

// Stop ends the node and removes what it left on the host. A failed test keeps the node's
// logs under Dir/logs.
func (n *Node) Stop(t *testing.T) {
	signal.Stop(n.signals)
	close(n.signals)
	for _, err := range n.stop() {
		t.Error(err)
	}
	if t.Failed() {
		t.Logf("the node's logs: %s", filepath.Join(n.Dir, "logs"))
		for _, log := range []string{"kubelet.log", "containerd.log", "nodeinit.log"} {
			if data, err := os.ReadFile(filepath.Join(n.Dir, "logs", log)); err == nil {
				t.Logf("the end of %s:\n%s", log, tail(data, 15))
			}
		}
		return
	}
	if err := os.RemoveAll(n.Dir); err != nil {
		t.Errorf("removing the node's directory: %v", err)
	}
}

// stop kills the node and removes what it left on the host (nodeinit -clean), once; then
// releases the machine's node lock.
func (n *Node) stop() []error {
	n.stopping.Lock()
	defer n.stopping.Unlock()
	if n.lockFile == nil {
		return nil
	}
	var errs []error
	out, err := exec.Command(filepath.Join(n.Bins.Dir, "nodeinit"), "-clean", "-veth", hostVeth).CombinedOutput()
	if err != nil {
		errs = append(errs, fmt.Errorf("nodeinit -clean: %v\n%s", err, out))
	}
	if n.cmd != nil {
		_ = n.cmd.Wait()
		n.cmd = nil
	}
	n.PID = 0
	n.lockFile.Close() // releases the lock
	n.lockFile = nil
	return errs
}

// stopOnSignal stops the node when the test is interrupted (go test's timeout, Ctrl-C, a CI
// run ending), which skips the test's cleanups, then exits.
func (n *Node) stopOnSignal() {
	n.signals = make(chan os.Signal, 1)
	signal.Notify(n.signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s, ok := <-n.signals
		if !ok {
			return
		}
		// go test, which reads the output, may be gone (it dies of SIGTERM at once): a write
		// to its pipe must not kill this process before the node is stopped.
		signal.Ignore(syscall.SIGPIPE)
		errs := n.stop()
		fmt.Fprintf(os.Stderr, "test/node: %v: the node is stopped\n", s)
		for _, err := range errs {
			fmt.Fprintf(os.Stderr, "test/node: %v\n", err)
		}
		os.Exit(1)
	}()
}

// layOut writes the node's files: bin/ (the runtime, the kubelet, kubeadm, kubectl, crictl,
// the systemctl stand-in), containerd's configuration, the CNI network; and the host's
// missing mount points.
func (n *Node) layOut(t *testing.T) {
	t.Helper()
	bin := filepath.Join(n.Dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	runtime := filepath.Join(n.root, "runtime", "bin")
	links := map[string]string{
		"systemctl":      filepath.Join(n.Bins.Dir, "nodeinit"),
		"kubelet":        filepath.Join(n.Release.Bins.Dir, "kubelet"),
		"kubeadm":        n.Release.Bins.Kubeadm,
		"kube-apiserver": n.Release.Bins.APIServer,
	}
	for _, name := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "crictl"} {
		links[name] = filepath.Join(runtime, name)
	}
	for _, name := range []string{"kubectl", "nodeinit"} {
		links[name] = filepath.Join(n.Bins.Dir, name)
	}
	n.link(t, links)
	cniBin := filepath.Join(n.Dir, "opt-cni", "bin")
	if err := os.MkdirAll(cniBin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if err := os.Symlink(filepath.Join(runtime, plugin), filepath.Join(cniBin, plugin)); err != nil {
			t.Fatal(err)
		}
	}
	WriteFile(t, filepath.Join(n.Dir, "etc-cni", "net.d", "10-portcullis-node.conflist"), cniNetwork)
	n.layOutWork(t)
}

// link points each of the node's commands (bin/<name>) at its target, replacing the link
// there was.
func (n *Node) link(t *testing.T, links map[string]string) {
	t.Helper()
	for name, target := range links {
		if _, err := os.Stat(target); err != nil {
			t.Fatalf("%s is not built (%v): run make test-node", target, err)
		}
		path := filepath.Join(n.Dir, "bin", name)
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
}

// layOutWork writes the operator's working directory, the release's directory as the guide
// has it: the release's binary as ./kube-apiserver, and its deploy kit under build/deploy (the
// path the guide's blocks name; an older minor's release has the same files under deploy/).
func (n *Node) layOutWork(t *testing.T) {
	t.Helper()
	n.Work = filepath.Join(n.Dir, "work")
	if err := os.RemoveAll(n.Work); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(n.Work, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(n.Release.Bins.APIServer, filepath.Join(n.Work, "kube-apiserver")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", n.Release.Kit, filepath.Join(n.Work, "build", "deploy")).CombinedOutput(); err != nil {
		t.Fatalf("copying the deploy kit: %v\n%s", err, out)
	}
}

// nodePaths are the host paths the node has of its own: nodeinit bind-mounts over each, in
// the node only, the directory of Dir named after it ("/" replaced by "-").
// Besides kubeadm's, the kubelet's and containerd's own, the CNI plugins' (/var/lib/cni: the
// addresses host-local hands out), containerd's opt plugin's and the kubelet's volume
// plugins' (/usr/libexec/kubernetes).
var nodePaths = []string{
	"/etc/kubernetes", "/etc/containerd", "/etc/cni", "/opt/cni", "/opt/containerd",
	"/var/lib/kubelet", "/var/lib/etcd", "/var/lib/containerd", "/var/lib/cni",
	"/var/log/pods", "/var/log/containers", "/usr/libexec/kubernetes", "/root",
}

// checkPaths fails when the node would hide the suite's own files: its directory, binaries or
// repository under a node path (a clone in /root).
func (n *Node) checkPaths(t *testing.T) {
	t.Helper()
	for _, dir := range []string{n.root, n.Bins.Dir, docs.RepoRoot(t)} {
		abs, err := filepath.Abs(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range nodePaths {
			if abs == path || strings.HasPrefix(abs, path+"/") {
				t.Fatalf("%s is under %s, which the node mounts a directory of its own over: the node would not see it. Clone the repository elsewhere (not under %s)", abs, path, strings.Join(nodePaths, ", "))
			}
		}
	}
}

// lock takes the machine's node lock (one node per machine: the veth, the cgroup root and the
// kernel settings are the machine's), held until stop.
func (n *Node) lock(t *testing.T) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(nodeLock), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(nodeLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		t.Fatalf("another node runs on this machine (%s is locked: %v): one node at a time", nodeLock, err)
	}
	n.lockFile = f
}

// hostCommand runs nodeinit's -prepare or -clean.
func (n *Node) hostCommand(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(filepath.Join(n.Bins.Dir, "nodeinit"), args...).CombinedOutput(); err != nil {
		t.Fatalf("nodeinit %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// cniNetwork is the node's pod network: a bridge with host-local addresses, and portmap.
const cniNetwork = `{
  "cniVersion": "1.0.0",
  "name": "portcullis-node",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "` + PodSubnet + `"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`

// containerdConfig is containerd's configuration: its defaults, with the sandbox image
// kubeadm names, cgroupfs (no systemd here), and the runtime told not to ask for a negative
// oom_score_adj (restrict_oom_score_adj), which needs CAP_SYS_RESOURCE, absent here.
func containerdConfig(sandboxImage string) string {
	return `version = 3
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "` + sandboxImage + `"
[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
      SystemdCgroup = false
`
}

// startInit starts nodeinit in the node's namespaces.
func (n *Node) startInit(t *testing.T) {
	t.Helper()
	log, err := os.Create(filepath.Join(n.Dir, "logs", "nodeinit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	args := append([]string{"--mount", "--uts", "--net", "--pid", "--fork", "--mount-proc", "--propagation", "private",
		filepath.Join(n.Bins.Dir, "nodeinit"), "-dir", n.Dir, "-hostname", Hostname}, nodePaths...)
	n.cmd = exec.Command("unshare", args...)
	n.cmd.Stdout, n.cmd.Stderr = log, log
	// Its own process group (a signal to the test's does not reach it), and killed when the
	// test dies without its cleanups (nodeinit then dies with it).
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	n.WaitFor(t, "the node's init", time.Minute, func() error {
		children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", n.cmd.Process.Pid, n.cmd.Process.Pid))
		if err != nil {
			return err
		}
		fields := strings.Fields(string(children))
		if len(fields) != 1 {
			return fmt.Errorf("unshare has children %q", fields)
		}
		n.PID, _ = strconv.Atoi(fields[0])
		return exec.Command("nsenter", fmt.Sprintf("--target=%d", n.PID), "--mount", "test", "-S", "/run/portcullis-node/systemctl.sock").Run()
	})
}

// startNetwork gives the node its end of a veth pair and a default route to the host's.
func (n *Node) startNetwork(t *testing.T) {
	t.Helper()
	inNode := fmt.Sprintf("nsenter --target=%d --net", n.PID)
	script := fmt.Sprintf(`set -o errexit
ip link add %[1]s type veth peer name eth0 netns %[2]d
ip addr add %[3]s/24 dev %[1]s
ip link set %[1]s up
%[5]s ip link set lo up
%[5]s ip addr add %[4]s/24 dev eth0
%[5]s ip link set eth0 up
%[5]s ip route add default via %[3]s
`, hostVeth, n.PID, HostAddress, NodeAddress, inNode)
	if out, err := exec.Command("bash", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("the node's network: %v\n%s", err, out)
	}
}

// Options are the docs runner's options for a command run on the node, as root logged in to
// it, in the operator's working directory, with KUBECONFIG the admin's.
func (n *Node) Options() docs.Options {
	return docs.Options{Node: n.PID, Path: []string{filepath.Join(n.Dir, "bin")}, Dir: n.Work, Env: []string{"KUBECONFIG=" + AdminConf}}
}

// Exec runs script on the node.
func (n *Node) Exec(t *testing.T, script string) (stdout, stderr string, err error) {
	t.Helper()
	return docs.Exec(t, script, n.Options())
}

// Run runs script on the node; its failure fails the test.
func (n *Node) Run(t *testing.T, script string) (stdout, stderr string) {
	t.Helper()
	return docs.Run(t, script, n.Options())
}

// RunBlock runs a documented block, exactly as written, on the node.
func (n *Node) RunBlock(t *testing.T, file, key string) (stdout, stderr string) {
	t.Helper()
	return n.Run(t, docs.Block(t, file, key))
}

// Client is a client of the node's API server as kubeadm's admin (admin.conf).
func (n *Node) Client(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", filepath.Join(n.Dir, "etc-kubernetes", "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	config.Timeout = 30 * time.Second
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// WaitFor polls cond every second until it returns nil, failing the test after timeout with
// its last error.
func (n *Node) WaitFor(t *testing.T, what string, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(time.Second)
	}
}

// KubeadmImages are the images `kubeadm config images list` of rel's kubeadm names for its
// Kubernetes version, by name (imageName).
func KubeadmImages(t *testing.T, rel Release) map[string]string {
	t.Helper()
	out, err := exec.Command(rel.Bins.Kubeadm, "config", "images", "list", "--kubernetes-version", rel.KubernetesVersion).Output()
	if err != nil {
		t.Fatalf("kubeadm config images list: %v", err)
	}
	refs := map[string]string{}
	for _, ref := range strings.Fields(string(out)) {
		refs[imageName(ref)] = ref
	}
	if refs["pause"] == "" {
		t.Fatalf("kubeadm config images list names no pause image:\n%s", out)
	}
	return refs
}

// kubeadmImages are the images of KubeadmImages the node imports: not kube-proxy's, whose
// addon the node skips (docs/node.md), and CoreDNS's only with coreDNS.
func (n *Node) kubeadmImages(t *testing.T, rel Release, coreDNS bool) map[string]string {
	t.Helper()
	refs := KubeadmImages(t, rel)
	delete(refs, "kube-proxy")
	if !coreDNS {
		delete(refs, "coredns")
	}
	return refs
}

// imageName is the last element of an image's name: registry.k8s.io/etcd:3.6.8-0 is etcd.
func imageName(ref string) string { return filepath.Base(ref[:strings.LastIndex(ref, ":")]) }

// importImages builds each image of refs from rel's binaries (pause from the suite's) and
// imports it into containerd's k8s.io namespace (the kubelet's). Each is laid out as its
// release image is where kubeadm's manifests depend on it: kubeadm runs the control plane's
// by command, CoreDNS and pause by their images' entrypoints.
func (n *Node) importImages(t *testing.T, rel Release, refs map[string]string) {
	t.Helper()
	binaries := map[string]string{
		"kube-apiserver":          rel.Bins.StockAPIServer,
		"kube-controller-manager": rel.Bins.ControllerManager,
		"kube-scheduler":          filepath.Join(rel.Bins.Dir, "kube-scheduler"),
		"etcd":                    rel.Bins.Etcd,
		"coredns":                 filepath.Join(rel.Bins.Dir, "coredns"),
		"pause":                   filepath.Join(n.Bins.Dir, "pause"),
	}
	for name, ref := range refs {
		binary, ok := binaries[name]
		if !ok {
			t.Fatalf("kubeadm asks for the image %s, which the node does not build", ref)
		}
		img := image.Image{Ref: ref, Files: []image.File{{Path: "/usr/local/bin/" + name, Source: binary, Mode: 0o755}}}
		if name == "pause" || name == "coredns" {
			img.Files[0].Path = "/" + name
			img.Entrypoint = []string{"/" + name}
		}
		n.importImage(t, img)
	}
}

// importImage writes img as an OCI archive and imports it into containerd's k8s.io
// namespace.
func (n *Node) importImage(t *testing.T, img image.Image) {
	t.Helper()
	dir := filepath.Join(n.Dir, "images")
	archive := filepath.Join(dir, imageName(img.Ref)+".oci.tar")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := image.Write(img, archive); err != nil {
		t.Fatal(err)
	}
	n.Run(t, "ctr -n k8s.io images import --local "+archive+" >/dev/null")
	if err := os.Remove(archive); err != nil {
		t.Fatal(err)
	}
}

// ImportAgnhost imports upstream's e2e test image, agnhost, built from the binary make agnhost
// wrote, under the name upstream's e2e suites give it (k8s.io/kubernetes/test/utils/image),
// with its image's entrypoint; it returns that name.
func (n *Node) ImportAgnhost(t *testing.T) string {
	t.Helper()
	ref := imageutils.GetE2EImage(imageutils.Agnhost)
	binary := filepath.Join(n.Bins.Dir, "agnhost")
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("agnhost's binary: %v (make test-node builds it, unless NODE_AGNHOST is empty)", err)
	}
	n.importImage(t, image.Image{
		Ref:        ref,
		Files:      []image.File{{Path: "/agnhost", Source: binary, Mode: 0o755}},
		Entrypoint: []string{"/agnhost"},
	})
	return ref
}

// ImportOurs imports our kube-apiserver's image of the node's release (make node-image) as
// ref, as if pulled from the registry the release's patch names.
func (n *Node) ImportOurs(t *testing.T, ref string) {
	t.Helper()
	archive := n.Release.Image
	base, tag, _ := strings.Cut(ref, ":")
	n.Run(t, fmt.Sprintf("ctr -n k8s.io images import --local --base-name %s %s >/dev/null", base, archive))
	out, _ := n.Run(t, "ctr -n k8s.io images ls -q")
	if !slices.Contains(strings.Fields(out), ref) {
		t.Fatalf("importing %s gave no image %s (tag %s); containerd has:\n%s", archive, ref, tag, out)
	}
}

// WriteFile writes a file of the node (its parent directories made).
func WriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tail(data []byte, lines int) string {
	all := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return string(bytes.Join(all, []byte("\n")))
}

// Context is a context for one request to the node.
func Context(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
