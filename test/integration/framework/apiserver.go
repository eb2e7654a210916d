package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/portcullis-k8s/portcullis/internal/pki"
)

// APIServer is a kube-apiserver process serving on loopback, with its own PKI.
type APIServer struct {
	// Config reaches the server as an admin (O=system:masters).
	Config *rest.Config
	// Client is a clientset for Config.
	Client kubernetes.Interface
	// Dir holds the server's PKI and log.
	Dir string
	// LogFile is the server's combined stdout and stderr.
	LogFile string
	process *process
}

// StartAPIServer runs binary against etcd with the flags a single-node control plane
// needs, plus extraFlags (which may override them), and waits for /readyz. The server
// stops when the test ends.
func StartAPIServer(t testing.TB, binary string, etcd *Etcd, extraFlags ...string) *APIServer {
	t.Helper()
	dir := t.TempDir()
	port := FreePort(t)
	flags := append(ServerFlags(t, dir, etcd, port), extraFlags...)
	s := &APIServer{Dir: dir, LogFile: filepath.Join(dir, "kube-apiserver.log")}
	s.process = startProcess(t, filepath.Base(binary), s.LogFile, binary, flags...)
	s.Config = &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", port),
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   filepath.Join(dir, "ca.crt"),
			CertFile: filepath.Join(dir, "admin.crt"),
			KeyFile:  filepath.Join(dir, "admin.key"),
		},
		QPS:   100,
		Burst: 200,
	}
	client, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = client
	err = waitFor(s.process, 2*time.Minute, "/readyz", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("/readyz: %v: %s", err, body)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ServerFlags writes a PKI into dir and returns the flags of a single-node kube-apiserver
// on 127.0.0.1:port backed by etcd: client-certificate authentication, RBAC, service
// accounts. etcd may be nil for a server that is never meant to reach storage.
func ServerFlags(t testing.TB, dir string, etcd *Etcd, port int) []string {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.ServingCert(dir, "serving", []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.ClientCert(dir, "admin", "admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	saKey, saPub, err := pki.ServiceAccountKeys(dir, "service-account")
	if err != nil {
		t.Fatal(err)
	}
	etcdURL := "http://127.0.0.1:1" // nothing listens there
	if etcd != nil {
		etcdURL = etcd.ClientURL
	}
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + itoa(port),
		"--cert-dir=" + dir,
		"--tls-cert-file=" + serving.CertFile,
		"--tls-private-key-file=" + serving.KeyFile,
		"--client-ca-file=" + ca.CertFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		// The kubernetes Service cannot point at a loopback address.
		"--endpoint-reconciler-type=none",
	}
}

var loadedChain = regexp.MustCompile(`Loaded \d+ (mutating|validating) admission controller\(s\) successfully in the following order: ([^ ]*)\.`)

// Chains returns the mutating and validating admission chains the server logged when it
// built them, in order.
func (s *APIServer) Chains(t testing.TB) (mutating, validating []string) {
	t.Helper()
	return ChainsFromLog(t, s.LogFile)
}

// ChainsFromLog reads the admission chains kube-apiserver logged to logFile. If it logged
// them more than once, every copy must agree.
func ChainsFromLog(t testing.TB, logFile string) (mutating, validating []string) {
	t.Helper()
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, m := range loadedChain.FindAllStringSubmatch(string(data), -1) {
		if prev, ok := seen[m[1]]; ok && prev != m[2] {
			t.Fatalf("%s logged two different %s chains: %s and %s", logFile, m[1], prev, m[2])
		}
		seen[m[1]] = m[2]
	}
	if len(seen) == 0 {
		t.Fatalf("%s logged no admission chain", logFile)
	}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	return split(seen["mutating"]), split(seen["validating"])
}
