package framework

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
)

// EtcdTLS are the files of an etcd that serves clients over mutual TLS.
type EtcdTLS struct {
	// CAFile verifies both the server and its clients.
	CAFile string
	// ServerCert and ServerKey are etcd's serving pair.
	ServerCert, ServerKey string
	// ClientCert and ClientKey are a client pair signed by CAFile, used for the health check.
	ClientCert, ClientKey string
}

// StartEtcdTLS starts an etcd serving https on loopback with client-certificate
// authentication and waits until it reports healthy. It stops when the test ends.
func StartEtcdTLS(t testing.TB, binary string, files EtcdTLS) *Etcd {
	t.Helper()
	dir := t.TempDir()
	clientPort := FreePort(t)
	url := fmt.Sprintf("https://127.0.0.1:%d", clientPort)
	flags := append(controlplane.EtcdFlags(filepath.Join(dir, "data"), clientPort, FreePort(t)),
		"--listen-client-urls="+url,
		"--advertise-client-urls="+url,
		"--cert-file="+files.ServerCert,
		"--key-file="+files.ServerKey,
		"--trusted-ca-file="+files.CAFile,
		"--client-cert-auth",
		"--unsafe-no-fsync",
	)
	p := startProcess(t, "etcd", filepath.Join(dir, "etcd.log"), binary, flags...)

	caPEM, err := os.ReadFile(files.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("%s holds no certificate", files.CAFile)
	}
	pair, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}},
	}}
	waitFor(t, p, time.Minute, "health over TLS", func() error {
		return controlplane.GetOK(client, url+"/health")
	})
	return &Etcd{ClientURL: url}
}

// StartProcess runs binary with args until the test ends, its output in logFile, and
// returns a function that reports whether it is still running (nil) or why it exited.
func StartProcess(t testing.TB, name, logFile, binary string, args ...string) (running func() error) {
	t.Helper()
	return startProcess(t, name, logFile, binary, args...).Running
}
