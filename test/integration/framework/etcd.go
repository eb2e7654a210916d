package framework

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
)

// Etcd is a single-member etcd on loopback, with its data in a temporary directory.
type Etcd struct {
	// ClientURL is what --etcd-servers takes.
	ClientURL string
}

// StartEtcd starts etcd and waits until it reports healthy. It stops when the test ends.
func StartEtcd(t testing.TB, binary string) *Etcd {
	t.Helper()
	dir := t.TempDir()
	clientPort := FreePort(t)
	flags := controlplane.EtcdFlags(filepath.Join(dir, "data"), clientPort, FreePort(t))
	// Test data is thrown away: skip fsync to spare the disk.
	flags = append(flags, "--unsafe-no-fsync")
	p := startProcess(t, "etcd", filepath.Join(dir, "etcd.log"), binary, flags...)
	url := controlplane.EtcdURL(clientPort)
	client := &http.Client{Timeout: 2 * time.Second}
	waitFor(t, p, time.Minute, "health", func() error {
		return controlplane.GetOK(client, url+"/health")
	})
	return &Etcd{ClientURL: url}
}
