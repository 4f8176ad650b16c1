package slackfake

import (
	"encoding/json"
	"time"

	"github.com/gorilla/websocket"
)

// socketControl is what tests set, read and do to Socket Mode: its settings, the envelopes they
// send and what became of them, the sockets open, and the disconnects and cuts.
type socketControl struct{ m *socketMode }

// SetPingInterval sets how often the server pings each socket (default 5 s; slack-go hangs up
// when no ping comes for 30 s). Zero stops pings, for testing a silent socket.
func (sc *socketControl) SetPingInterval(d time.Duration) {
	sc.m.mu.Lock()
	sc.m.ping = d
	sc.m.mu.Unlock()
}

// SetRedelivery makes the server redeliver an envelope not acked within after, as a new
// envelope with retry_attempt n and retry_reason "timeout", up to retries times — as Slack
// does. Zero after (the default) turns redelivery off.
func (sc *socketControl) SetRedelivery(after time.Duration, retries int) {
	sc.m.mu.Lock()
	sc.m.redeliv, sc.m.retries = after, retries
	sc.m.mu.Unlock()
}

// LoseAcks makes the next n acks of envelopes not acked yet get lost with their socket, as when
// a connection fails between the client's ack and Slack: the server counts no ack, cuts that
// socket's connection without a close frame, and sends the envelope again, with retry_attempt
// one higher and retry_reason "timeout", on another open socket or the next one opened. The
// client saw and acknowledged the envelope, so the resend is a duplicate it must recognise.
func (sc *socketControl) LoseAcks(n int) {
	sc.m.mu.Lock()
	sc.m.lose = n
	sc.m.mu.Unlock()
}

// SetDisconnectGrace sets how long a socket stays open after the server sent it a disconnect
// (default 1 s), unless the client closes it first.
func (sc *socketControl) SetDisconnectGrace(d time.Duration) {
	sc.m.mu.Lock()
	sc.m.graceful = d
	sc.m.mu.Unlock()
}

// Send sends an envelope of type typ (events_api, interactive, slash_commands) with payload
// over a socket (held until one is open) and returns its envelope id.
func (sc *socketControl) Send(typ string, payload any) string {
	raw, err := json.Marshal(payload)
	if err != nil {
		panic("slackfake: payload does not marshal: " + err.Error())
	}
	e := &Envelope{ID: sc.m.newID(), Type: typ, Payload: raw}
	sc.m.send(e)
	return e.ID
}

// SendRaw writes data verbatim to every open socket (malformed frames, unknown types).
func (sc *socketControl) SendRaw(data []byte) {
	sc.m.mu.Lock()
	conns := make([]*sconn, 0, len(sc.m.conns))
	for _, c := range sc.m.conns {
		conns = append(conns, c)
	}
	sc.m.mu.Unlock()
	for _, c := range conns {
		c.wmu.Lock()
		_ = c.ws.WriteMessage(websocket.TextMessage, data)
		c.wmu.Unlock()
	}
}

// Redeliver sends envelope id's payload again as a new envelope with retry_attempt one higher
// and retry_reason reason (e.g. "timeout"), and returns the new envelope id.
func (sc *socketControl) Redeliver(id, reason string) string {
	sc.m.mu.Lock()
	e := sc.m.envs[id]
	sc.m.mu.Unlock()
	if e == nil {
		panic("slackfake: no envelope " + id)
	}
	return sc.m.redeliver(e, reason)
}

// Acked reports whether envelope id was acknowledged.
func (sc *socketControl) Acked(id string) bool {
	sc.m.mu.Lock()
	defer sc.m.mu.Unlock()
	e := sc.m.envs[id]
	return e != nil && e.Acked
}

// Unacked is the number of envelopes sent or pending that were not acknowledged.
func (sc *socketControl) Unacked() int {
	sc.m.mu.Lock()
	defer sc.m.mu.Unlock()
	return len(sc.m.envs) - sc.m.acked
}

// Acks returns every ack received, in order.
func (sc *socketControl) Acks() []Ack {
	sc.m.mu.Lock()
	defer sc.m.mu.Unlock()
	return append([]Ack(nil), sc.m.acks...)
}

// Envelopes returns every envelope sent or pending, in the order they were made.
func (sc *socketControl) Envelopes() []Envelope {
	sc.m.mu.Lock()
	defer sc.m.mu.Unlock()
	out := make([]Envelope, len(sc.m.order))
	for i, e := range sc.m.order {
		out[i] = *e
	}
	return out
}

// Connections is the number of sockets open now; Opened the number ever opened.
func (sc *socketControl) Connections() int {
	sc.m.mu.Lock()
	defer sc.m.mu.Unlock()
	return len(sc.m.conns)
}

// Opened is the number of sockets opened since the start.
func (sc *socketControl) Opened() int {
	sc.m.mu.Lock()
	defer sc.m.mu.Unlock()
	return sc.m.opened
}

// PeakConnections is the most sockets that were open at once since the start: a socket counts
// until the client closed it (on Linux, as soon as its close reached the kernel; elsewhere, once
// the server read it) or the server did.
func (sc *socketControl) PeakConnections() int {
	sc.m.mu.Lock()
	defer sc.m.mu.Unlock()
	return sc.m.peak
}

// Disconnect sends {"type":"disconnect","reason":reason} to every open socket ("warning",
// "refresh_requested", "link_disabled", …) and closes each after the disconnect grace unless
// the client closed it first.
func (sc *socketControl) Disconnect(reason string) {
	sm := sc.m
	sm.mu.Lock()
	conns := make([]*sconn, 0, len(sm.conns))
	for _, c := range sm.conns {
		conns = append(conns, c)
	}
	grace := sm.graceful
	sm.mu.Unlock()
	for _, c := range conns {
		_ = c.write(map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "fake-slack"}})
		sm.wg.Add(1)
		go func() {
			defer sm.wg.Done()
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-t.C:
				sm.drop(c)
			case <-c.done:
			}
		}()
	}
}

// DropSockets cuts every open socket's TCP connection without a close frame, as a network
// failure would.
func (sc *socketControl) DropSockets() {
	sc.m.mu.Lock()
	conns := make([]*sconn, 0, len(sc.m.conns))
	for _, c := range sc.m.conns {
		conns = append(conns, c)
	}
	sc.m.mu.Unlock()
	for _, c := range conns {
		sc.m.cut(c)
	}
}
