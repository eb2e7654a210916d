// Package controlplane knows how to lay out a single-node control plane on loopback: its
// PKI and kubeconfigs, and the flags of etcd, kube-apiserver and kube-controller-manager.
// `make run` and the integration tests both build on it, so they start servers alike.
package controlplane

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/portcullis-k8s/portcullis/internal/pki"
)

// ServiceClusterIPRange is the range Services take their cluster IPs from.
const ServiceClusterIPRange = "10.0.0.0/24"

// PKI is the set of files a control plane authenticates with.
type PKI struct {
	CA                pki.Pair
	Serving           pki.Pair
	Admin             pki.Pair
	ControllerManager pki.Pair
	ServiceAccountKey string // private: kube-apiserver signs tokens with it, so does KCM
	ServiceAccountPub string // public: token verification
}

// WritePKI creates, in dir, whatever part of the PKI is missing, and returns it all. Keys
// are written 0600. Existing files are reused, so a restarted control plane keeps its
// identity and its clients' kubeconfigs keep working.
func WritePKI(dir string) (*PKI, error) {
	ca, err := pki.LoadOrCreateCA(dir, "ca")
	if err != nil {
		return nil, err
	}
	files := &PKI{CA: pki.Pair{CertFile: ca.CertFile, KeyFile: ca.KeyFile}}
	if files.Serving, err = ca.ServingCert(dir, "kube-apiserver", []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}); err != nil {
		return nil, err
	}
	if files.Admin, err = ca.ClientCert(dir, "admin", "admin", "system:masters"); err != nil {
		return nil, err
	}
	if files.ControllerManager, err = ca.ClientCert(dir, "kube-controller-manager", "system:kube-controller-manager"); err != nil {
		return nil, err
	}
	if files.ServiceAccountKey, files.ServiceAccountPub, err = pki.ServiceAccountKeys(dir, "service-account"); err != nil {
		return nil, err
	}
	return files, nil
}

// URL returns the https URL of a server on 127.0.0.1:port.
func URL(port int) string { return fmt.Sprintf("https://127.0.0.1:%d", port) }

// WriteKubeconfig writes a kubeconfig for server that authenticates with client and trusts
// ca. It points at the files rather than embedding them, and is written 0600.
func WriteKubeconfig(path, server string, ca, client pki.Pair) error {
	config := clientcmdapi.NewConfig()
	config.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: ca.CertFile}
	config.AuthInfos["local"] = &clientcmdapi.AuthInfo{ClientCertificate: client.CertFile, ClientKey: client.KeyFile}
	config.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "local"}
	config.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// EtcdFlags are the flags of a single-member etcd on loopback.
func EtcdFlags(dataDir string, clientPort, peerPort int) []string {
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	return []string{
		"--name=local",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=local=" + peer,
		"--log-level=warn",
	}
}

// EtcdURL is the client URL of the etcd EtcdFlags describes.
func EtcdURL(clientPort int) string { return fmt.Sprintf("http://127.0.0.1:%d", clientPort) }

// APIServerFlags are the flags of a kube-apiserver on 127.0.0.1:port backed by etcdURL:
// client-certificate authentication, Node and RBAC authorization, service-account tokens.
func APIServerFlags(files *PKI, certDir, etcdURL string, port int) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + files.Serving.CertFile,
		"--tls-private-key-file=" + files.Serving.KeyFile,
		"--client-ca-file=" + files.CA.CertFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + files.ServiceAccountPub,
		"--service-account-signing-key-file=" + files.ServiceAccountKey,
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		// The kubernetes Service cannot point at a loopback address, so no endpoint
		// reconciler: in-cluster clients have no way to reach a loopback server anyway.
		"--endpoint-reconciler-type=none",
	}
}

// ControllerManagerFlags are the flags of a kube-controller-manager that reaches the API
// server through kubeconfig and serves its own health on 127.0.0.1:port.
func ControllerManagerFlags(files *PKI, kubeconfig, certDir string, port int) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--service-account-private-key-file=" + files.ServiceAccountKey,
		"--root-ca-file=" + files.CA.CertFile,
		"--use-service-account-credentials=true",
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		"--cluster-signing-cert-file=" + files.CA.CertFile,
		"--cluster-signing-key-file=" + files.CA.KeyFile,
		"--leader-elect=false",
	}
}

// Clients returns n clientsets for config, each with a dialer of its own: client-go shares
// one transport, and so one HTTP/2 connection, between equal configs, and n clients would
// otherwise be n streams on one connection rather than n connections.
func Clients(config *rest.Config, n int) ([]kubernetes.Interface, error) {
	clients := make([]kubernetes.Interface, n)
	for i := range clients {
		c := rest.CopyConfig(config)
		c.Dial = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		client, err := kubernetes.NewForConfig(c)
		if err != nil {
			return nil, err
		}
		clients[i] = client
	}
	return clients, nil
}
