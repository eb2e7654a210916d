package framework

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
)

// StartControllerManager runs kube-controller-manager against server, as `make run` does
// (controlplane.ControllerManagerFlags), and waits for its /healthz. It stops when the test
// ends.
func StartControllerManager(t testing.TB, binary string, server *APIServer) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kube-controller-manager.kubeconfig")
	if err := controlplane.WriteKubeconfig(kubeconfig, controlplane.URL(server.Port), server.PKI.CA, server.PKI.ControllerManager); err != nil {
		t.Fatal(err)
	}
	port := FreePort(t)
	p := startProcess(t, "kube-controller-manager", filepath.Join(dir, "kube-controller-manager.log"), binary,
		controlplane.ControllerManagerFlags(server.PKI, kubeconfig, dir, port)...)
	// Its serving certificate is self-signed: health is all this client asks of it.
	selfSigned := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	waitFor(t, p, 2*time.Minute, "kube-controller-manager /healthz", func() error {
		return controlplane.GetOK(selfSigned, fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
	})
}
