package soak

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// balancerDialTimeout bounds the dial of one backend; a dead one on loopback refuses at once.
const balancerDialTimeout = time.Second

// tcpBalancer spreads TCP connections from a loopback port over backends, round robin, and
// fails over: a backend that does not accept is skipped for that connection. A connection
// already open to a backend that dies is closed, and the client redials. It is the load
// balancer in front of an HA pair of kube-apiservers.
type tcpBalancer struct {
	listener net.Listener
	backends []string
	next     atomic.Uint64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func startBalancer(backends ...string) (*tcpBalancer, error) {
	if len(backends) == 0 {
		return nil, errors.New("a balancer needs at least one backend")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &tcpBalancer{listener: l, backends: backends, conns: map[net.Conn]struct{}{}}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

func (b *tcpBalancer) Addr() string { return b.listener.Addr().String() }

func (b *tcpBalancer) accept() {
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
		if !b.track(in, out) {
			return
		}
		b.wg.Add(1)
		go b.splice(in, out)
	}
}

// dial tries each backend once, starting from the next in turn; nil when none accepts.
func (b *tcpBalancer) dial() net.Conn {
	start := b.next.Add(1)
	for i := range b.backends {
		backend := b.backends[(start+uint64(i))%uint64(len(b.backends))]
		if c, err := net.DialTimeout("tcp", backend, balancerDialTimeout); err == nil {
			return c
		}
	}
	return nil
}

func (b *tcpBalancer) track(conns ...net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		b.conns[c] = struct{}{}
	}
	return true
}

// splice copies both ways until either side ends, then closes both.
func (b *tcpBalancer) splice(in, out net.Conn) {
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
	b.mu.Lock()
	delete(b.conns, in)
	delete(b.conns, out)
	b.mu.Unlock()
}

// Close stops accepting, closes every connection and waits, boundedly, for the goroutines.
func (b *tcpBalancer) Close() error {
	b.mu.Lock()
	b.closed = true
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	err := b.listener.Close()
	finished := make(chan struct{})
	go func() { b.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(proxyCloseWait):
		return errors.New("the balancer's connections did not close in time")
	}
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
