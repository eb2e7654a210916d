package framework

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/proc"
)

// stopTimeout bounds a graceful stop; kube-apiserver drains for a few seconds by design.
const stopTimeout = 60 * time.Second

// startProcess starts binary and stops it when the test ends.
func startProcess(t testing.TB, name, logFile, binary string, args ...string) *proc.Process {
	t.Helper()
	p, err := proc.Start(name, logFile, binary, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(stopTimeout); err != nil {
			t.Error(err)
		}
	})
	return p
}

// waitFor polls check until it passes, failing the test if p exits or timeout passes.
func waitFor(t testing.TB, p *proc.Process, timeout time.Duration, what string, check func() error) {
	t.Helper()
	if err := p.WaitFor(context.Background(), timeout, 100*time.Millisecond, what, check, nil); err != nil {
		t.Fatal(err)
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
