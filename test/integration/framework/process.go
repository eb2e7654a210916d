package framework

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// process is a child process whose output goes to a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logFile string
	exited  chan struct{}
	err     error // set when exited is closed
}

// startProcess starts binary with args, output appended to logFile, and stops it (SIGTERM,
// then SIGKILL after stopTimeout) when the test ends.
func startProcess(t testing.TB, name, logFile, binary string, args ...string) *process {
	t.Helper()
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, logFile: logFile, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stopTimeout bounds a graceful stop; kube-apiserver drains for a few seconds by design.
const stopTimeout = 60 * time.Second

func (p *process) stop(t testing.TB) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		t.Errorf("%s did not stop within %s of SIGTERM; killing it", p.name, stopTimeout)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// running reports an error if the process has exited.
func (p *process) running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v\n%s", p.name, p.err, p.logTail())
	default:
		return nil
	}
}

// logTail returns the last lines of the process's log, for failure messages.
func (p *process) logTail() string {
	data, err := os.ReadFile(p.logFile)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return fmt.Sprintf("--- last lines of %s ---\n%s", p.logFile, bytes.Join(lines, []byte("\n")))
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

// waitFor polls check until it returns nil, the process exits, or timeout passes.
func waitFor(p *process, timeout time.Duration, what string, check func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if err := p.running(); err != nil {
			return err
		}
		if last = check(); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("%s: %s not reached within %s", p.name, what, timeout), last, errors.New(p.logTail()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
