package listen

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// track marks each request's connection busy while its handler runs, so that connLimit closes
// only connections no handler is serving.
func (l *Listener) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tc, ok := r.Context().Value(trackedConnKey{}).(*trackedConn); ok {
			tc.enter()
			defer tc.leave()
		}
		h.ServeHTTP(w, r)
	})
}

type trackedConnKey struct{}

// connLimit is a net.Listener that keeps at most max connections open. At the limit it makes
// room for a new connection by closing the one that has gone longest without a request in a
// handler — a client that connected and sends nothing, or drips its headers, or an idle
// keep-alive — so that a client sending its request at once (a health probe, a platform's
// delivery) is served however many others hold connections; when a handler serves every one,
// the newcomer is closed instead. Either is counted as a connection_limit refusal.
type connLimit struct {
	net.Listener
	max      int
	onRefuse func(remote string)

	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

// trackedConn is a connection connLimit holds.
type trackedConn struct {
	net.Conn
	l *connLimit
	// Guarded by l.mu: busy counts the requests in a handler; since is when the connection
	// was accepted or its last handler returned.
	busy  int
	since time.Time
}

// Accept returns the next connection, closing the longest idle one (or the newcomer) at the
// limit.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, l: l, since: time.Now()}
		l.mu.Lock()
		var victim *trackedConn
		if len(l.conns) >= l.max {
			victim = l.idlestLocked()
			if victim == nil {
				l.mu.Unlock()
				_ = c.Close()
				l.onRefuse(c.RemoteAddr().String())
				continue
			}
			delete(l.conns, victim)
		}
		l.conns[tc] = struct{}{}
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Conn.Close() // its server goroutine sees the error and closes it again
			l.onRefuse(victim.RemoteAddr().String())
		}
		return tc, nil
	}
}

// idlestLocked is the connection longest without a handler, nil when all are in one.
func (l *connLimit) idlestLocked() *trackedConn {
	var idlest *trackedConn
	for c := range l.conns {
		if c.busy == 0 && (idlest == nil || c.since.Before(idlest.since)) {
			idlest = c
		}
	}
	return idlest
}

// open is how many connections are open.
func (l *connLimit) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

func (c *trackedConn) enter() {
	c.l.mu.Lock()
	c.busy++
	c.l.mu.Unlock()
}

func (c *trackedConn) leave() {
	c.l.mu.Lock()
	c.busy--
	c.since = time.Now()
	c.l.mu.Unlock()
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}
