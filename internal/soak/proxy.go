package soak

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/balancer"
)

const (
	// maxProxyDelay bounds the delay a proxy adds, so a mistaken option cannot stall a run.
	maxProxyDelay = 5 * time.Second
	// proxyChunk is the most a proxy reads at once; proxyQueue the chunks it holds per
	// direction of a connection, bounding its memory to 2 MiB per direction.
	proxyChunk = 32 << 10
	proxyQueue = 64
	// proxyCloseWait bounds how long Close waits for the connections' goroutines.
	proxyCloseWait = 10 * time.Second
)

// delayProxy forwards TCP connections from a loopback port to a target, delaying every
// chunk of data, either way, by the delay in force when the chunk was read. Order is kept;
// with no delay the bytes pass at once. It is the slow etcd: kube-apiserver's etcd client
// dials the proxy.
type delayProxy struct {
	listener net.Listener
	target   string
	delay    atomic.Int64 // nanoseconds

	conns balancer.Conns
	wg    sync.WaitGroup
}

// startDelayProxy listens on a fresh port of 127.0.0.1 and forwards to target.
func startDelayProxy(target string) (*delayProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &delayProxy{listener: l, target: target}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address, host:port.
func (p *delayProxy) Addr() string { return p.listener.Addr().String() }

// SetDelay sets the delay added to chunks read from now on, capped at maxProxyDelay.
func (p *delayProxy) SetDelay(d time.Duration) {
	p.delay.Store(int64(min(max(d, 0), maxProxyDelay)))
}

func (p *delayProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.listener.Accept()
		if err != nil {
			return // closed
		}
		out, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			in.Close()
			continue
		}
		if !p.conns.Track(in, out) {
			return
		}
		p.wg.Add(2)
		go p.pipe(out, in)
		go p.pipe(in, out)
	}
}

type delayedChunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each chunk held until its due time. When either side ends, both
// connections close: the peer of a half-open connection would otherwise wait forever.
func (p *delayProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	queue := make(chan delayedChunk, proxyQueue)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for chunk := range queue {
			if wait := time.Until(chunk.due); wait > 0 {
				time.Sleep(wait) // at most maxProxyDelay; Close unblocks the writes after
			}
			if _, err := dst.Write(chunk.data); err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
		for range queue { // drain, so the reader never blocks on a dead writer
		}
	}()
	for {
		buf := make([]byte, proxyChunk)
		n, err := src.Read(buf)
		if n > 0 {
			queue <- delayedChunk{data: buf[:n], due: time.Now().Add(time.Duration(p.delay.Load()))}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	<-done
	p.conns.Untrack(dst, src)
}

// Close stops accepting, closes every connection and waits, boundedly, for its goroutines.
func (p *delayProxy) Close() error {
	p.conns.CloseAll()
	err := p.listener.Close()
	finished := make(chan struct{})
	go func() { p.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(proxyCloseWait):
		err = errors.Join(err, fmt.Errorf("the proxy to %s did not stop within %s", p.target, proxyCloseWait))
	}
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

var _ io.Closer = (*delayProxy)(nil)
