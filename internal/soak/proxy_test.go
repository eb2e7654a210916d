package soak

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers every connection with what it reads, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return l.Addr().String()
}

// roundTrip sends msg through conn and reads it back, returning how long that took.
func roundTrip(t *testing.T, conn net.Conn, msg []byte) time.Duration {
	t.Helper()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("the proxy changed the bytes: sent %d, got back %d different", len(msg), len(got))
	}
	return time.Since(start)
}

func TestDelayProxy(t *testing.T) {
	p, err := startDelayProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	big := bytes.Repeat([]byte("0123456789abcdef"), 3*proxyChunk/16+5) // several chunks
	roundTrip(t, conn, big)

	const delay = 40 * time.Millisecond
	p.SetDelay(delay)
	// Both directions are delayed: a round trip takes at least twice the delay.
	if took := roundTrip(t, conn, []byte("slow")); took < 2*delay {
		t.Errorf("a round trip with %s each way took %s, want at least %s", delay, took, 2*delay)
	}
	p.SetDelay(0)
	roundTrip(t, conn, big)

	p.SetDelay(time.Hour)
	if got := time.Duration(p.delay.Load()); got != maxProxyDelay {
		t.Errorf("delay of an hour stored as %s, want the cap %s", got, maxProxyDelay)
	}
	p.SetDelay(-time.Second)
	if got := p.delay.Load(); got != 0 {
		t.Errorf("negative delay stored as %d, want 0", got)
	}

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// The client's connection is closed by the proxy.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("the connection is still open after Close")
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Error("the proxy still accepts after Close")
	}
}

func TestDelayProxyUnreachableTarget(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	p, err := startDelayProxy(dead)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("a connection to an unreachable target stayed open")
	}
}
