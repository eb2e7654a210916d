package framework

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// Etcd is a single-member etcd on loopback, with its data in a temporary directory.
type Etcd struct {
	// ClientURL is what --etcd-servers takes.
	ClientURL string
	process   *process
}

// StartEtcd starts etcd and waits until it reports healthy. It stops when the test ends.
func StartEtcd(t testing.TB, binary string) *Etcd {
	t.Helper()
	dir := t.TempDir()
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	p := startProcess(t, "etcd", filepath.Join(dir, "etcd.log"), binary,
		"--name=test",
		"--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL,
		// Test data is thrown away: skip fsync to spare the disk.
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	client := &http.Client{Timeout: 2 * time.Second}
	err := waitFor(p, time.Minute, "health", func() error {
		resp, err := client.Get(clientURL + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/health: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Etcd{ClientURL: clientURL, process: p}
}
