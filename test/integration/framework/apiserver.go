package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/proc"
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
	// PKI is the control plane's PKI, in Dir.
	PKI *controlplane.PKI
	// Port is the server's secure port on 127.0.0.1.
	Port int

	process *proc.Process
}

// StartAPIServer runs binary against etcd with the flags of a single-node control plane
// (controlplane.APIServerFlags) plus extraFlags, which may override them, and waits for
// /readyz. The server stops when the test ends.
func StartAPIServer(t testing.TB, binary string, etcd *Etcd, extraFlags ...string) *APIServer {
	t.Helper()
	return StartAPIServerWithPKI(t, binary, etcd, nil, extraFlags...)
}

// StartAPIServerWithPKI is StartAPIServer with the control plane's PKI given: servers that
// share one (an HA pair behind a balancer, one binary swapped for another) trust the same
// clients and sign the same service-account tokens. A nil files writes a new PKI.
func StartAPIServerWithPKI(t testing.TB, binary string, etcd *Etcd, files *controlplane.PKI, extraFlags ...string) *APIServer {
	t.Helper()
	dir := t.TempDir()
	port := FreePort(t)
	if files == nil {
		files = WritePKI(t, dir)
	}
	flags := append(controlplane.APIServerFlags(files, dir, etcd.ClientURL, port), extraFlags...)
	s := &APIServer{Dir: dir, LogFile: filepath.Join(dir, "kube-apiserver.log"), PKI: files, Port: port}
	p := startProcess(t, filepath.Base(binary), s.LogFile, binary, flags...)
	s.process = p
	s.Config = &rest.Config{
		Host: controlplane.URL(port),
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   files.CA.CertFile,
			CertFile: files.Admin.CertFile,
			KeyFile:  files.Admin.KeyFile,
		},
		QPS:   100,
		Burst: 200,
	}
	client, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = client
	waitFor(t, p, 2*time.Minute, "/readyz", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("/readyz: %v: %s", err, body)
		}
		return nil
	})
	return s
}

// Stop stops the server (SIGTERM, then its drain) before the test ends.
func (s *APIServer) Stop(t testing.TB) {
	t.Helper()
	if err := s.process.Stop(stopTimeout); err != nil {
		t.Error(err)
	}
}

// WritePKI writes a control plane's PKI into dir.
func WritePKI(t testing.TB, dir string) *controlplane.PKI {
	t.Helper()
	files, err := controlplane.WritePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Chains returns the admission chains the server logged when it built them.
func (s *APIServer) Chains(t testing.TB) controlplane.Chains {
	t.Helper()
	data, err := os.ReadFile(s.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	chains, err := controlplane.ParseChains(data)
	if err != nil {
		t.Fatalf("%s: %v", s.LogFile, err)
	}
	return chains
}
