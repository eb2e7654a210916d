// Package docs_test runs the documentation's command blocks exactly as written (the text comes
// from test/docs.Block), with the real tools — kubeadm and kubectl built from the pinned
// Kubernetes module, our kube-apiserver, coreutils — against a real kube-apiserver and etcd,
// in a mount namespace where temporary directories stand in for a node's /etc/kubernetes,
// /root and the rest. test/docs.Blocks lists which test runs which block.
package docs_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	etcd := framework.StartEtcd(t, n.bins.Etcd)
	n.server = framework.StartAPIServerWithPKI(t, n.bins.APIServer, etcd, files, flags...)
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
	config.Clusters["kubernetes"] = &clientcmdapi.Cluster{Server: n.server.Config.Host, CertificateAuthorityData: readFile(t, ca.CertFile)}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: readFile(t, pair.CertFile), ClientKeyData: readFile(t, pair.KeyFile)}
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

func readPod(t *testing.T, path string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(readFile(t, path), &pod); err != nil {
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

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
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
