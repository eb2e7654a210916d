// Package balancer is a TCP load balancer on loopback: round robin over backends, with
// failover. The soak's HA pairs and the rollback test's mixed pair sit behind it.
package balancer

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// balancerDialTimeout bounds the dial of one backend; a dead one on loopback refuses at
	// once.
	balancerDialTimeout = time.Second
	// closeWait bounds how long Close waits for the connections' goroutines.
	closeWait = 10 * time.Second
)

// TCP spreads TCP connections from a loopback port over backends, round robin, and fails
// over: a backend that does not accept is skipped for that connection. A connection already
// open to a backend that dies is closed, and the client redials. It is the load balancer in
// front of an HA pair of kube-apiservers.
type TCP struct {
	listener net.Listener
	backends []string
	next     atomic.Uint64

	conns Conns
	wg    sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and balances its connections over backends
// (host:port).
func Start(backends ...string) (*TCP, error) {
	if len(backends) == 0 {
		return nil, errors.New("a balancer needs at least one backend")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &TCP{listener: l, backends: backends}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

// Addr is the balancer's host:port.
func (b *TCP) Addr() string { return b.listener.Addr().String() }

func (b *TCP) accept() {
	defer b.wg.Done()
	for {
		in, err := b.listener.Accept()
		if err != nil {
			return
		}
		out := b.dial()
		if out == nil {
			in.Close()
			continue
		}
		if !b.conns.Track(in, out) {
			return
		}
		b.wg.Add(1)
		go b.splice(in, out)
	}
}

// dial tries each backend once, starting from the next in turn; nil when none accepts.
func (b *TCP) dial() net.Conn {
	start := b.next.Add(1)
	for i := range b.backends {
		backend := b.backends[(start+uint64(i))%uint64(len(b.backends))]
		if c, err := net.DialTimeout("tcp", backend, balancerDialTimeout); err == nil {
			return c
		}
	}
	return nil
}

// splice copies both ways until either side ends, then closes both.
func (b *TCP) splice(in, out net.Conn) {
	defer b.wg.Done()
	done := make(chan struct{}, 2)
	copyConn := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go copyConn(out, in)
	go copyConn(in, out)
	<-done
	in.Close()
	out.Close()
	<-done
	b.conns.Untrack(in, out)
}

// Close stops accepting, closes every connection and waits, boundedly, for the goroutines.
func (b *TCP) Close() error {
	b.conns.CloseAll()
	err := b.listener.Close()
	finished := make(chan struct{})
	go func() { b.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(closeWait):
		return errors.New("the balancer's connections did not close in time")
	}
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
