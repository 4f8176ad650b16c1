package discordfake

import "time"

// gatewayControl is what tests set, read and do to the gateway: its settings, what it received,
// the events it dispatches, and the disconnects it makes.
type gatewayControl struct{ g *gateway }

// Dispatch sends an op 0 event of type t with data d on the current session, with the next
// sequence number. While the session has no connection the event is kept for a RESUME to
// replay; with no session at all it is lost (counted by Undelivered). Without the message
// content intent, a guild MESSAGE_CREATE that does not mention the bot arrives with empty
// content, as Discord sends it.
func (gc *gatewayControl) Dispatch(t string, d map[string]any) { gc.g.dispatch(t, d) }

// SetHeartbeatInterval sets the interval HELLO announces (default 45 s).
func (gc *gatewayControl) SetHeartbeatInterval(d time.Duration) {
	gc.g.mu.Lock()
	gc.g.heartbeatMS = int(d / time.Millisecond)
	gc.g.mu.Unlock()
}

// AllowPrivilegedIntents sets which privileged intents IDENTIFY may ask for (default the
// message content intent, as when its switch is on in the Developer Portal); others get close
// 4014.
func (gc *gatewayControl) AllowPrivilegedIntents(mask int) {
	gc.g.mu.Lock()
	gc.g.allowed = mask
	gc.g.mu.Unlock()
}

// AcceptResumeAnywhere makes RESUME work on the generic gateway URL too. By default only
// resume_gateway_url resumes; a RESUME elsewhere gets op 9 (session not resumable), which is
// what a client that ignores resume_gateway_url risks with Discord.
func (gc *gatewayControl) AcceptResumeAnywhere() {
	gc.g.mu.Lock()
	gc.g.strict = false
	gc.g.mu.Unlock()
}

// SilenceHeartbeatAcks makes the gateway stop (on) or resume (off) answering heartbeats, as a
// zombied connection does; a client should close such a connection and resume.
func (gc *gatewayControl) SilenceHeartbeatAcks(on bool) {
	gc.g.mu.Lock()
	gc.g.silent = on
	gc.g.mu.Unlock()
}

// Identifies lists the IDENTIFYs received.
func (gc *gatewayControl) Identifies() []Identify {
	gc.g.mu.Lock()
	defer gc.g.mu.Unlock()
	return append([]Identify(nil), gc.g.identifies...)
}

// Resumes lists the RESUMEs received.
func (gc *gatewayControl) Resumes() []Resume {
	gc.g.mu.Lock()
	defer gc.g.mu.Unlock()
	return append([]Resume(nil), gc.g.resumes...)
}

// Heartbeats counts the op 1 heartbeats received.
func (gc *gatewayControl) Heartbeats() int {
	gc.g.mu.Lock()
	defer gc.g.mu.Unlock()
	return gc.g.heartbeats
}

// Connected reports whether every shard has a session with a live, identified (or resumed)
// connection.
func (gc *gatewayControl) Connected() bool {
	gc.g.mu.Lock()
	defer gc.g.mu.Unlock()
	return gc.g.connectedLocked()
}

// SessionID is the current session's id ("" before the first READY).
func (gc *gatewayControl) SessionID() string {
	gc.g.mu.Lock()
	defer gc.g.mu.Unlock()
	if gc.g.cur[0] == nil {
		return ""
	}
	return gc.g.cur[0].id
}

// Undelivered counts dispatches made while no session existed (lost, as with Discord).
func (gc *gatewayControl) Undelivered() int {
	gc.g.mu.Lock()
	defer gc.g.mu.Unlock()
	return gc.g.undelivered
}

// WaitConnected blocks until a session has a live connection or timeout passes; it reports
// whether one has.
func (gc *gatewayControl) WaitConnected(timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		gc.g.mu.Lock()
		ok := gc.g.connectedLocked()
		ch := gc.g.changed
		gc.g.mu.Unlock()
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

// DropShard is Drop for shard i's connection.
func (gc *gatewayControl) DropShard(i int) bool {
	c := gc.g.currentShard(i)
	if c == nil {
		return false
	}
	gc.g.detach(c)
	_ = c.ws.NetConn().Close()
	return true
}

// Drop cuts the current connection without a close frame (the client sees 1006, abnormal
// closure); the session stays resumable. It reports whether there was one.
func (gc *gatewayControl) Drop() bool {
	c := gc.g.current()
	if c == nil {
		return false
	}
	gc.g.detach(c)
	_ = c.ws.NetConn().Close()
	return true
}

// CloseWith closes the current connection with a close frame of code. For 4007 and 4009 the
// session is forgotten (not resumable), as Discord does. It reports whether there was one.
func (gc *gatewayControl) CloseWith(code int, reason string) bool {
	c := gc.g.current()
	if c == nil {
		return false
	}
	gc.g.detach(c)
	if code == CloseInvalidSeq || code == CloseSessionTimedOut {
		gc.g.mu.Lock()
		if c.sess != nil {
			delete(gc.g.sessions, c.sess.id)
		}
		gc.g.mu.Unlock()
	}
	c.closeWith(code, reason)
	return true
}

// InvalidSession sends op 9 on the current connection; with resumable false the session is
// forgotten first.
func (gc *gatewayControl) InvalidSession(resumable bool) bool {
	c := gc.g.current()
	if c == nil {
		return false
	}
	if !resumable {
		gc.g.mu.Lock()
		if c.sess != nil {
			delete(gc.g.sessions, c.sess.id)
			if gc.g.cur[c.sess.shard] == c.sess {
				delete(gc.g.cur, c.sess.shard)
			}
		}
		c.sess = nil
		gc.g.notifyLocked()
		gc.g.mu.Unlock()
	}
	return c.write(map[string]any{"op": 9, "d": resumable}) == nil
}

// Reconnect sends op 7 (the client should reconnect and resume).
func (gc *gatewayControl) Reconnect() bool {
	c := gc.g.current()
	if c == nil {
		return false
	}
	return c.write(map[string]any{"op": 7, "d": nil}) == nil
}
