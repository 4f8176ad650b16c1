package redistest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Stalled is a Redis that accepts connections and reads what it is sent but never answers, as a
// Redis does when it stalls (a long command, a full disk, a frozen VM): go-redis's calls on it
// end at the client's own read timeout, not at their context's deadline. The readiness probe's
// and the HTTP listener's tests hold a handler on it.
type Stalled struct {
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

// NewStalled listens on a free local port; the test's end closes it (Close).
func NewStalled(tb testing.TB) *Stalled {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Stalled{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.closed {
				// Accepted as Close ran: nobody would close it, and its reader would keep
				// Close waiting for ever.
				s.mu.Unlock()
				_ = c.Close()
				return
			}
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() { _, _ = io.Copy(io.Discard, c) })
		}
	})
	tb.Cleanup(s.Close)
	return s
}

// Addr is the host:port to give a client.
func (s *Stalled) Addr() string { return s.ln.Addr().String() }

// Close drops every connection (the clients' commands then fail at once) and stops. It may be
// called more than once: a test calls it to end a stall, and the test's end calls it again.
func (s *Stalled) Close() {
	_ = s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
