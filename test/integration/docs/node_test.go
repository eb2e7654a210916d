// Package docs_test runs the documentation's command blocks exactly as written (the text comes
// from test/docs.Block), with the real tools — kubeadm and kubectl built from the pinned
// Kubernetes module, our kube-apiserver, coreutils — against a real kube-apiserver and etcd,
// in a mount namespace where temporary directories stand in for a node's /etc/kubernetes,
// /root and the rest. test/docs.Blocks lists which test runs which block.
package docs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/pki"
	"github.com/portcullis-k8s/portcullis/test/docs"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

const (
	// nodeName is the control-plane node's host name (its own UTS namespace) and kubeadm
	// node name.
	nodeName = "cp-1"
	// advertiseAddress is the systemd node's address (its environment file's).
	advertiseAddress = "192.0.2.10"
	adminConf        = "/etc/kubernetes/admin.conf"
)

// tools are the programs the blocks run besides the system's.
type tools struct {
	bins    framework.Binaries
	kubeadm string
	kubectl string
	// dir holds kubeadm, kubectl and kube-apiserver (ours): it comes first in PATH.
	dir string
}

func findTools(t *testing.T) tools {
	t.Helper()
	bins := framework.FindBinaries(t)
	tl := tools{bins: bins, kubeadm: filepath.Join(bins.Dir, "kubeadm"), kubectl: filepath.Join(bins.Dir, "kubectl"), dir: t.TempDir()}
	for _, path := range []string{tl.kubeadm, tl.kubectl} {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s is not built (%v): run `make kubeadm kubectl` (make build-test-binaries builds them), then go test", path, err)
		}
	}
	for name, target := range map[string]string{"kubeadm": tl.kubeadm, "kubectl": tl.kubectl, "kube-apiserver": bins.APIServer} {
		if err := os.Symlink(target, filepath.Join(tl.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return tl
}

// version is the Portcullis version the binary under test reports (VERSION).
func version(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(docs.RepoRoot(t), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// kubernetesVersion is the Kubernetes release the version is built on (v1.37.2).
func kubernetesVersion(t *testing.T) string {
	v, _, _ := strings.Cut(version(t), "+")
	return v
}

// node is a control-plane node's file system, standing in directories, and a running server.
type node struct {
	tools
	server *framework.APIServer
	etcd   *framework.Etcd
	// etc, root and work stand in for /etc/kubernetes, /root and the operator's working
	// directory (the release's files: ./kube-apiserver and build/deploy/).
	etc, root, work string
	opts            docs.Options
}

// newNode lays out a node's directories and a working directory with the release's files;
// KUBECONFIG is /etc/kubernetes/admin.conf. mounts are more node paths to stand in for.
func newNode(t *testing.T, mounts map[string]string) *node {
	t.Helper()
	tl := findTools(t)
	n := &node{tools: tl, etc: t.TempDir(), root: t.TempDir(), work: t.TempDir()}
	if err := os.Symlink(tl.bins.APIServer, filepath.Join(n.work, "kube-apiserver")); err != nil {
		t.Fatal(err)
	}
	copyTree(t, filepath.Join(docs.RepoRoot(t), "build", "deploy"), filepath.Join(n.work, "build", "deploy"))
	n.opts = docs.Options{
		Mounts:   map[string]string{"/etc/kubernetes": n.etc, "/root": n.root},
		Path:     []string{tl.dir},
		Dir:      n.work,
		Env:      []string{"KUBECONFIG=" + adminConf},
		Hostname: nodeName,
	}
	for target, dir := range mounts {
		n.opts.Mounts[target] = dir
	}
	return n
}

// startServer starts etcd and our kube-apiserver with files (nil: a PKI of its own) and
// flags.
func (n *node) startServer(t *testing.T, files *controlplane.PKI, flags ...string) {
	t.Helper()
	n.etcd = framework.StartEtcd(t, n.bins.Etcd)
	n.server = framework.StartAPIServerWithPKI(t, n.bins.APIServer, n.etcd, files, flags...)
}

// serveManifest does the kubelet's part once a manifest is in place: it stops the node's
// server and starts our binary with the command line of /etc/kubernetes/manifests'
// kube-apiserver.yaml, on the same port (where the node's address and port 6443 forward),
// and waits for /readyz; it returns the admission chains the server logged. The node's paths in the flags become the directories standing in
// for them, and the manifest's etcd (kubeadm's, on the node, over TLS) the test's; every
// other flag is the manifest's as written.
func (n *node) serveManifest(t *testing.T) controlplane.Chains {
	t.Helper()
	command := apiServerContainer(t, readPod(t, filepath.Join(n.etc, "manifests", "kube-apiserver.yaml"))).Command
	var args []string
	for _, arg := range command[1:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		switch name {
		case "etcd-servers":
			args = append(args, "--etcd-servers="+n.etcd.ClientURL)
		case "etcd-cafile", "etcd-certfile", "etcd-keyfile":
		case "secure-port":
			args = append(args, fmt.Sprintf("--secure-port=%d", n.server.Port))
		default:
			args = append(args, strings.ReplaceAll(arg, "=/etc/kubernetes/", "="+n.etc+"/"))
		}
	}
	if _, ok := flagValue(command, "secure-port"); !ok {
		args = append(args, fmt.Sprintf("--secure-port=%d", n.server.Port))
	}
	n.server.Stop(t)
	logFile := filepath.Join(t.TempDir(), "kube-apiserver.log")
	running := framework.StartProcess(t, "kube-apiserver from the manifest", logFile, n.bins.APIServer, args...)
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := running(); err != nil {
			return false, fmt.Errorf("the server from the manifest exited: %w", err)
		}
		_, err := n.server.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver %q: %v", args, err)
	}
	chains, err := controlplane.ParseChains(docs.ReadFile(t, logFile))
	if err != nil {
		t.Fatalf("%s: %v", logFile, err)
	}
	return chains
}

// writeAdminConf writes, for a server with a PKI of its own, what kubeadm init writes:
// admin.conf, a client of the group kubeadm:cluster-admins (bound to cluster-admin), with the
// certificates embedded.
func (n *node) writeAdminConf(t *testing.T) {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(n.server.Dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	const user = "kubernetes-admin"
	pair, err := ca.ClientCert(t.TempDir(), user, user, "kubeadm:cluster-admins")
	if err != nil {
		t.Fatal(err)
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["kubernetes"] = &clientcmdapi.Cluster{Server: n.server.Config.Host, CertificateAuthorityData: docs.ReadFile(t, ca.CertFile)}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: docs.ReadFile(t, pair.CertFile), ClientKeyData: docs.ReadFile(t, pair.KeyFile)}
	config.Contexts[user+"@kubernetes"] = &clientcmdapi.Context{Cluster: "kubernetes", AuthInfo: user}
	config.CurrentContext = user + "@kubernetes"
	if err := clientcmd.WriteToFile(*config, filepath.Join(n.etc, "admin.conf")); err != nil {
		t.Fatal(err)
	}
	_, err = n.server.Client.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:cluster-admins"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "kubeadm:cluster-admins"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// run runs the command block of file with key on the node, as written.
func (n *node) run(t *testing.T, file, key string) (stdout, stderr string) {
	t.Helper()
	return docs.Run(t, docs.Block(t, file, key), n.opts)
}

// kubeadmNode lays out what kubeadm init leaves on a control-plane node, with the real
// kubeadm, from an InitConfiguration that, as most do, leaves the advertise address to
// kubeadm (the default route's): the PKI in /etc/kubernetes/pki, admin.conf and
// super-admin.conf, the kube-apiserver static pod manifest, the ClusterConfiguration in the
// kubeadm-config ConfigMap, and the kubelet's mirror pod of the manifest. Our kube-apiserver
// serves with the node's PKI, and the node's address and port 6443 (where kubeadm's commands
// reach the node's own server) forward to it. A listening socket stands in for containerd's,
// which kubeadm looks for to pick the CRI.
func kubeadmNode(t *testing.T) *node {
	t.Helper()
	return kubeadmNodeWith(t, nil)
}

// kubeadmNodeWith is kubeadmNode with more node paths standing in (for a runtime added later).
func kubeadmNodeWith(t *testing.T, mounts map[string]string) *node {
	t.Helper()
	containerd := t.TempDir()
	listenUnix(t, filepath.Join(containerd, "containerd.sock"))
	all := map[string]string{"/run/containerd": containerd}
	for target, dir := range mounts {
		all[target] = dir
	}
	n := newNode(t, all)

	fixtures := t.TempDir()
	initConfig := filepath.Join(fixtures, "kubeadm-init.yaml")
	// certSANs: the test's own client reaches the server on 127.0.0.1.
	writeFile(t, initConfig, `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  name: `+nodeName+`
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: `+kubernetesVersion(t)+`
apiServer:
  certSANs: [127.0.0.1]
`)
	render := filepath.Join(fixtures, "render")
	docs.Run(t, `
kubeadm init phase certs all --config `+initConfig+`
kubeadm init phase kubeconfig admin --config `+initConfig+`
kubeadm init phase kubeconfig super-admin --config `+initConfig+`
install -d -m 0700 `+render+`
KUBEADM_INIT_DRYRUN_DIR=`+render+` kubeadm init phase control-plane apiserver --config `+initConfig+` --dry-run
install -D -m 0600 `+render+`/kube-apiserver.yaml /etc/kubernetes/manifests/kube-apiserver.yaml
`, n.opts)

	// The server, with the node's PKI; the test's client is a system:masters one of its CA.
	pkiDir := filepath.Join(n.etc, "pki")
	ca, err := pki.LoadOrCreateCA(pkiDir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	own := t.TempDir()
	admin, err := ca.ClientCert(own, "test-admin", "test-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	n.startServer(t, &controlplane.PKI{
		CA:                pki.Pair{CertFile: ca.CertFile, KeyFile: ca.KeyFile},
		Serving:           pki.Pair{CertFile: filepath.Join(pkiDir, "apiserver.crt"), KeyFile: filepath.Join(pkiDir, "apiserver.key")},
		Admin:             admin,
		ControllerManager: admin,
		ServiceAccountKey: filepath.Join(pkiDir, "sa.key"),
		ServiceAccountPub: filepath.Join(pkiDir, "sa.pub"),
	})
	pod := readPod(t, filepath.Join(n.etc, "manifests", "kube-apiserver.yaml"))
	address, ok := flagValue(apiServerContainer(t, pod).Command, "advertise-address")
	if !ok {
		t.Fatal("kubeadm's manifest has no --advertise-address")
	}
	forward(t, net.JoinHostPort(address, "6443"), fmt.Sprintf("127.0.0.1:%d", n.server.Port))

	// The ClusterConfiguration, and the cluster-info ConfigMap a joining node discovers the
	// cluster through, as kubeadm init publishes them.
	docs.Run(t, "kubeadm init phase upload-config kubeadm --config "+initConfig+"\nkubeadm init phase bootstrap-token --config "+initConfig+"\n", n.opts)

	// The kubelet's mirror pod of the static pod: the manifest's pod, named after the node,
	// bound to it, with the kubelet's annotations.
	pod.Name += "-" + nodeName
	pod.Spec.NodeName = nodeName
	sum := sha256.Sum256(docs.ReadFile(t, filepath.Join(n.etc, "manifests", "kube-apiserver.yaml")))
	hash := hex.EncodeToString(sum[:16])
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations["kubernetes.io/config.mirror"] = hash
	pod.Annotations["kubernetes.io/config.hash"] = hash
	pod.Annotations["kubernetes.io/config.source"] = "file"
	if _, err := n.server.Client.CoreV1().Pods(pod.Namespace).Create(context.Background(), &pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the mirror pod: %v", err)
	}
	return n
}

// listenUnix listens on a Unix socket at path until the test ends: a container runtime's
// socket, as kubeadm looks for one.
func listenUnix(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
}

// forward accepts connections on from (the node's address and kube-apiserver port) and
// forwards each to to, until the test ends.
func forward(t *testing.T, from, to string) {
	t.Helper()
	l, err := net.Listen("tcp", from)
	if err != nil {
		t.Fatalf("kubeadm's commands reach the node's kube-apiserver on its address and port 6443, where the test listens: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", to)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in); out.Close() }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
}

func readPod(t *testing.T, path string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(docs.ReadFile(t, path), &pod); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pod
}

func apiServerContainer(t *testing.T, pod corev1.Pod) corev1.Container {
	t.Helper()
	for _, c := range pod.Spec.Containers {
		if c.Name == "kube-apiserver" {
			return c
		}
	}
	t.Fatalf("pod %s has no kube-apiserver container", pod.Name)
	return corev1.Container{}
}

// flagValue returns the value of --name in a command line.
func flagValue(command []string, name string) (string, bool) {
	for _, arg := range command {
		if v, ok := strings.CutPrefix(arg, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}
