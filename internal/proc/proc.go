// Package proc supervises the child processes of a local control plane: each writes to its
// own log file, can be waited on, and stops with SIGTERM, then SIGKILL after a grace period.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a running child process.
type Process struct {
	Name    string
	LogFile string
	cmd     *exec.Cmd
	exited  chan struct{}
	err     error // valid once exited is closed
}

// Start runs binary with args, appending its stdout and stderr to logFile. The child gets
// its own process group, so a Ctrl-C in the terminal reaches only the supervisor, which
// then stops the children in order.
func Start(name, logFile, binary string, args ...string) (*Process, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s's log: %w", name, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, binary, err)
	}
	p := &Process{Name: name, LogFile: logFile, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the child's process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Running returns an error, with the tail of the log, if the process has exited.
func (p *Process) Running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v)\n%s", p.Name, p.err, p.LogTail(30))
	default:
		return nil
	}
}

// Stop sends SIGTERM and waits up to grace for the process to exit, then kills it. It
// returns an error if the process had to be killed.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", p.Name, grace)
	}
}

// LogTail returns the last n lines of the process's log, headed by the log's path.
func (p *Process) LogTail(n int) string {
	data, err := os.ReadFile(p.LogFile)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.LogFile, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("--- last lines of %s ---\n%s", p.LogFile, bytes.Join(lines, []byte("\n")))
}

// WaitFor polls check every interval until it returns nil, the process exits, ctx ends or
// timeout passes. progress, if not nil, is told of each failed check.
func (p *Process) WaitFor(ctx context.Context, timeout, interval time.Duration, what string, check func() error, progress func(elapsed time.Duration, last error)) error {
	start := time.Now()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := p.Running(); err != nil {
			return err
		}
		last := check()
		if last == nil {
			return nil
		}
		elapsed := time.Since(start)
		if elapsed > timeout {
			return errors.Join(fmt.Errorf("%s: %s not reached within %s", p.Name, what, timeout), last, errors.New(p.LogTail(30)))
		}
		if progress != nil {
			progress(elapsed, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for %s %s", p.Name, what)
		case <-ticker.C:
		}
	}
}
