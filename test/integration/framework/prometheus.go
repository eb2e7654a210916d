package framework

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/proc"
)

// Prometheus is a real Prometheus server on loopback, serving a history written before it
// started.
type Prometheus struct {
	URL     string
	process *proc.Process
}

// StartPrometheus backfills history (OpenMetrics text, "# EOF" last) into a fresh TSDB with
// promtool, then serves it with prometheus on a free port of 127.0.0.1 until the test ends.
// Both come with Debian's prometheus package: hack/install-test-deps.sh installs it.
func StartPrometheus(t testing.TB, history []byte) *Prometheus {
	t.Helper()
	var tools [2]string
	for i, name := range []string{"promtool", "prometheus"} {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s is not on PATH: run hack/install-test-deps.sh (Debian's prometheus package), as make test does", name)
		}
		tools[i] = path
	}
	dir := t.TempDir()
	data, tsdb := filepath.Join(dir, "history.om"), filepath.Join(dir, "tsdb")
	if err := os.WriteFile(data, history, 0o600); err != nil {
		t.Fatal(err)
	}
	// One block for the whole history: Prometheus then opens a handful of blocks, not one per
	// two hours.
	if out, err := exec.Command(tools[0], "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=800h", data, tsdb).CombinedOutput(); err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte("global: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := FreePort(t)
	p := startProcess(t, "prometheus", filepath.Join(dir, "prometheus.log"), tools[1],
		"--config.file="+config,
		"--storage.tsdb.path="+tsdb,
		"--storage.tsdb.retention.time=90d",
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
	)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{Timeout: 2 * time.Second}
	waitFor(t, p, time.Minute, "prometheus /-/ready", func() error { return controlplane.GetOK(client, url+"/-/ready") })
	return &Prometheus{URL: url, process: p}
}

// Stop stops the server before the test ends.
func (p *Prometheus) Stop(t testing.TB) {
	t.Helper()
	if err := p.process.Stop(stopTimeout); err != nil {
		t.Error(err)
	}
}
