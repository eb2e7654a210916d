package framework

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/proc"
)

// Etcd is a single-member etcd on loopback, with its data in a temporary directory.
type Etcd struct {
	// ClientURL is what --etcd-servers takes.
	ClientURL string
	// Binary is the etcd server running now.
	Binary string

	dir                  string
	clientPort, peerPort int
	starts               int
	process              *proc.Process
}

// StartEtcd starts etcd and waits until it reports healthy. It stops when the test ends.
func StartEtcd(t testing.TB, binary string) *Etcd {
	t.Helper()
	e := &Etcd{dir: t.TempDir(), clientPort: FreePort(t), peerPort: FreePort(t)}
	e.ClientURL = controlplane.EtcdURL(e.clientPort)
	e.start(t, binary)
	return e
}

// Replace stops etcd and starts binary on the same data and ports, as kubeadm's upgrade
// replaces etcd's static pod with the next version's: one member, its data read by another
// etcd. It waits until the new one reports healthy.
func (e *Etcd) Replace(t testing.TB, binary string) {
	t.Helper()
	if err := e.process.Stop(stopTimeout); err != nil {
		t.Fatalf("stopping %s: %v", e.Binary, err)
	}
	e.start(t, binary)
}

func (e *Etcd) start(t testing.TB, binary string) {
	t.Helper()
	e.starts++
	flags := controlplane.EtcdFlags(filepath.Join(e.dir, "data"), e.clientPort, e.peerPort)
	// Test data is thrown away: skip fsync to spare the disk.
	flags = append(flags, "--unsafe-no-fsync")
	e.process = startProcess(t, "etcd", filepath.Join(e.dir, fmt.Sprintf("etcd-%d.log", e.starts)), binary, flags...)
	e.Binary = binary
	client := &http.Client{Timeout: 2 * time.Second}
	waitFor(t, e.process, time.Minute, "health", func() error {
		return controlplane.GetOK(client, e.ClientURL+"/health")
	})
}
