package balancer

import (
	"net"
	"testing"
	"time"
)

// nameServer answers every connection with name and closes it.
func nameServer(t *testing.T, name string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(name))
			c.Close()
		}
	}()
	return l
}

func ask(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 16)
	n, _ := c.Read(buf)
	return string(buf[:n])
}

func TestBalancerRoundRobinAndFailover(t *testing.T) {
	a, b := nameServer(t, "a"), nameServer(t, "b")
	defer b.Close()
	lb, err := Start(a.Addr().String(), b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	seen := map[string]int{}
	for range 6 {
		seen[ask(t, lb.Addr())]++
	}
	if seen["a"] != 3 || seen["b"] != 3 {
		t.Errorf("6 connections went %v, want 3 to each backend", seen)
	}
	a.Close() // a dies: every connection goes to b
	for range 4 {
		if got := ask(t, lb.Addr()); got != "b" {
			t.Errorf("with a down, a connection answered %q, want b", got)
		}
	}
	b.Close() // none left: the connection is closed without an answer
	if got := ask(t, lb.Addr()); got != "" {
		t.Errorf("with no backend, got %q", got)
	}
	if err := lb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", lb.Addr(), time.Second); err == nil {
		t.Error("the balancer accepts after Close")
	}
}

func TestBalancerNeedsBackends(t *testing.T) {
	if _, err := Start(); err == nil {
		t.Error("a balancer without backends started")
	}
}
