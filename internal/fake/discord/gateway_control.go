package discordfake

import "time"

// What tests set, read and do to the gateway: its settings, what it received, and the
// disconnects it makes.

// SetHeartbeatInterval sets the interval HELLO announces (default 45 s).
func (s *Server) SetHeartbeatInterval(d time.Duration) {
	s.gw.mu.Lock()
	s.gw.heartbeatMS = int(d / time.Millisecond)
	s.gw.mu.Unlock()
}

// AllowPrivilegedIntents sets which privileged intents IDENTIFY may ask for (default the
// message content intent, as when its switch is on in the Developer Portal); others get close
// 4014.
func (s *Server) AllowPrivilegedIntents(mask int) {
	s.gw.mu.Lock()
	s.gw.allowed = mask
	s.gw.mu.Unlock()
}

// AcceptResumeAnywhere makes RESUME work on the generic gateway URL too. By default only
// resume_gateway_url resumes; a RESUME elsewhere gets op 9 (session not resumable), which is
// what a client that ignores resume_gateway_url risks with Discord.
func (s *Server) AcceptResumeAnywhere() {
	s.gw.mu.Lock()
	s.gw.strict = false
	s.gw.mu.Unlock()
}

// SilenceHeartbeatAcks makes the gateway stop (on) or resume (off) answering heartbeats, as a
// zombied connection does; a client should close such a connection and resume.
func (s *Server) SilenceHeartbeatAcks(on bool) {
	s.gw.mu.Lock()
	s.gw.silent = on
	s.gw.mu.Unlock()
}

// Identifies lists the IDENTIFYs received.
func (s *Server) Identifies() []Identify {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	return append([]Identify(nil), s.gw.identifies...)
}

// Resumes lists the RESUMEs received.
func (s *Server) Resumes() []Resume {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	return append([]Resume(nil), s.gw.resumes...)
}

// Heartbeats counts the op 1 heartbeats received.
func (s *Server) Heartbeats() int {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	return s.gw.heartbeats
}

// Connected reports whether every shard has a session with a live, identified (or resumed)
// connection.
func (s *Server) Connected() bool {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	return s.gw.connectedLocked()
}

func (g *gateway) connectedLocked() bool {
	if len(g.cur) < g.shards {
		return false
	}
	for _, sess := range g.cur {
		if sess.conn == nil {
			return false
		}
	}
	return len(g.cur) > 0
}

// SessionID is the current session's id ("" before the first READY).
func (s *Server) SessionID() string {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	if s.gw.cur[0] == nil {
		return ""
	}
	return s.gw.cur[0].id
}

// Undelivered counts dispatches made while no session existed (lost, as with Discord).
func (s *Server) Undelivered() int {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	return s.gw.undelivered
}

// WaitConnected blocks until a session has a live connection or timeout passes; it reports
// whether one has.
func (s *Server) WaitConnected(timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.gw.mu.Lock()
		ok := s.gw.connectedLocked()
		ch := s.gw.changed
		s.gw.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// current returns the live connection of shard 0's session, if any.
func (g *gateway) current() *conn { return g.currentShard(0) }

func (g *gateway) currentShard(i int) *conn {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cur[i] == nil {
		return nil
	}
	return g.cur[i].conn
}

// DropShard is Drop for shard i's connection.
func (s *Server) DropShard(i int) bool {
	c := s.gw.currentShard(i)
	if c == nil {
		return false
	}
	s.detach(c)
	_ = c.ws.NetConn().Close()
	return true
}

// Drop cuts the current connection without a close frame (the client sees 1006, abnormal
// closure); the session stays resumable. It reports whether there was one.
func (s *Server) Drop() bool {
	c := s.gw.current()
	if c == nil {
		return false
	}
	s.detach(c)
	_ = c.ws.NetConn().Close()
	return true
}

// CloseWith closes the current connection with a close frame of code. For 4007 and 4009 the
// session is forgotten (not resumable), as Discord does. It reports whether there was one.
func (s *Server) CloseWith(code int, reason string) bool {
	c := s.gw.current()
	if c == nil {
		return false
	}
	s.detach(c)
	if code == CloseInvalidSeq || code == CloseSessionTimedOut {
		s.gw.mu.Lock()
		if c.sess != nil {
			delete(s.gw.sessions, c.sess.id)
		}
		s.gw.mu.Unlock()
	}
	c.closeWith(code, reason)
	return true
}

// InvalidSession sends op 9 on the current connection; with resumable false the session is
// forgotten first.
func (s *Server) InvalidSession(resumable bool) bool {
	c := s.gw.current()
	if c == nil {
		return false
	}
	if !resumable {
		s.gw.mu.Lock()
		if c.sess != nil {
			delete(s.gw.sessions, c.sess.id)
			if s.gw.cur[c.sess.shard] == c.sess {
				delete(s.gw.cur, c.sess.shard)
			}
		}
		c.sess = nil
		s.gw.notifyLocked()
		s.gw.mu.Unlock()
	}
	return c.write(map[string]any{"op": 9, "d": resumable}) == nil
}

// Reconnect sends op 7 (the client should reconnect and resume).
func (s *Server) Reconnect() bool {
	c := s.gw.current()
	if c == nil {
		return false
	}
	return c.write(map[string]any{"op": 7, "d": nil}) == nil
}

func (s *Server) detach(c *conn) {
	g := &s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.conns, c)
	if c.sess != nil && c.sess.conn == c {
		c.sess.conn = nil
	}
	g.notifyLocked()
}
