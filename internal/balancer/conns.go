package balancer

import (
	"net"
	"sync"
)

// Conns is the set of a proxy's open connections, so that closing the proxy closes them all:
// a connection tracked after CloseAll is closed at once.
type Conns struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// Track adds conns, or closes them and returns false when CloseAll has run.
func (s *Conns) Track(conns ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	for _, c := range conns {
		s.conns[c] = struct{}{}
	}
	return true
}

// Untrack forgets conns, which their owner has closed.
func (s *Conns) Untrack(conns ...net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range conns {
		delete(s.conns, c)
	}
}

// CloseAll closes every tracked connection, and every one tracked later.
func (s *Conns) CloseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
}
