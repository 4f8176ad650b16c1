package slackfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Ack is an acknowledgement a client sent over Socket Mode.
type Ack struct {
	EnvelopeID string
	// Payload is the ack's payload ("" when none was sent).
	Payload string
	// Conn is the connection it came on (1 for the first connection opened).
	Conn int
	At   time.Time
}

// Envelope is one Socket Mode envelope the fake sent (or holds until a socket is open).
type Envelope struct {
	ID   string
	Type string // events_api, interactive, slash_commands
	// Payload is the envelope's payload JSON.
	Payload json.RawMessage
	// RetryAttempt and RetryReason are what the envelope carried (0 and "" the first time).
	RetryAttempt int
	RetryReason  string
	// Conn is the connection it was written to (0 while pending).
	Conn  int
	Acked bool
}

type socketState struct {
	mu       sync.Mutex
	conns    map[int]*sconn
	opened   int
	peak     int // most sockets open at once
	pending  []*Envelope
	envs     map[string]*Envelope
	order    []*Envelope
	acks     []Ack
	acked    int // envelopes acknowledged
	rr       int
	seq      int
	ping     time.Duration
	redeliv  time.Duration
	retries  int
	timers   map[string]*time.Timer
	graceful time.Duration
	lose     int // acks still to lose with their socket (LoseAcks)
	closed   bool
	wg       sync.WaitGroup
}

type sconn struct {
	id   int
	ws   *websocket.Conn
	wmu  sync.Mutex
	done chan struct{}
	once sync.Once
}

func (c *sconn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

func (c *sconn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

func (st *socketState) init() {
	st.conns = map[int]*sconn{}
	st.envs = map[string]*Envelope{}
	st.timers = map[string]*time.Timer{}
	st.ping = 5 * time.Second
	st.graceful = time.Second
}

// SetPingInterval sets how often the server pings each socket (default 5 s; slack-go hangs up
// when no ping comes for 30 s). Zero stops pings, for testing a silent socket.
func (s *Server) SetPingInterval(d time.Duration) {
	s.sock.mu.Lock()
	s.sock.ping = d
	s.sock.mu.Unlock()
}

// SetRedelivery makes the server redeliver an envelope not acked within after, as a new
// envelope with retry_attempt n and retry_reason "timeout", up to retries times — as Slack
// does. Zero after (the default) turns redelivery off.
func (s *Server) SetRedelivery(after time.Duration, retries int) {
	s.sock.mu.Lock()
	s.sock.redeliv, s.sock.retries = after, retries
	s.sock.mu.Unlock()
}

// LoseAcks makes the next n acks of envelopes not acked yet get lost with their socket, as when
// a connection fails between the client's ack and Slack: the server counts no ack, cuts that
// socket's connection without a close frame, and sends the envelope again, with retry_attempt
// one higher and retry_reason "timeout", on another open socket or the next one opened. The
// client saw and acknowledged the envelope, so the resend is a duplicate it must recognise.
func (s *Server) LoseAcks(n int) {
	s.sock.mu.Lock()
	s.sock.lose = n
	s.sock.mu.Unlock()
}

// SetDisconnectGrace sets how long a socket stays open after the server sent it a disconnect
// (default 1 s), unless the client closes it first.
func (s *Server) SetDisconnectGrace(d time.Duration) {
	s.sock.mu.Lock()
	s.sock.graceful = d
	s.sock.mu.Unlock()
}

var upgrader = websocket.Upgrader{
	// slack-go sends Origin: https://api.slack.com; accept any origin.
	CheckOrigin: func(*http.Request) bool { return true },
}

func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	st := &s.sock
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	st.wg.Add(1)
	st.mu.Unlock()
	defer st.wg.Done()
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		_ = ws.Close()
		return
	}
	st.opened++
	c := &sconn{id: st.opened, ws: ws, done: make(chan struct{})}
	// A socket the client closed before it opened this one is not open alongside it, even
	// when the goroutine reading it has not seen the close yet.
	alongside := 1
	for _, o := range st.conns {
		if !peerClosed(o.ws.NetConn()) {
			alongside++
		}
	}
	st.conns[c.id] = c
	ping := st.ping
	n := len(st.conns)
	st.peak = max(st.peak, alongside)
	st.mu.Unlock()

	hello := map[string]any{"type": "hello", "num_connections": n,
		"connection_info": map[string]any{"app_id": AppID},
		"debug_info":      map[string]any{"host": "fake-slack", "build_number": 1, "approximate_connection_time": 18060}}
	if err := c.write(hello); err != nil {
		st.drop(c)
		return
	}
	if ping > 0 {
		st.wg.Add(1)
		go st.pinger(c, ping)
	}
	st.flush()
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			st.drop(c)
			return
		}
		var a struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(data, &a) != nil || a.EnvelopeID == "" {
			continue
		}
		if st.ack(Ack{EnvelopeID: a.EnvelopeID, Payload: string(a.Payload), Conn: c.id, At: time.Now()}) {
			st.loseAck(c, a.EnvelopeID)
		}
	}
}

func (st *socketState) pinger(c *sconn, every time.Duration) {
	defer st.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			if c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(5*time.Second)) != nil {
				return
			}
		}
	}
}

func (st *socketState) drop(c *sconn) {
	st.mu.Lock()
	delete(st.conns, c.id)
	st.mu.Unlock()
	c.close()
}

// cut drops c without a close frame, as a network failure would; it stops counting as open
// before its connection closes.
func (st *socketState) cut(c *sconn) {
	st.mu.Lock()
	delete(st.conns, c.id)
	st.mu.Unlock()
	_ = c.ws.NetConn().Close()
	c.close()
}

// ack counts a; it reports instead that a is to be lost with its socket (LoseAcks), counting
// nothing, when it acknowledges an envelope not acked yet and acks are to be lost.
func (st *socketState) ack(a Ack) (lose bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if e := st.envs[a.EnvelopeID]; e != nil && !e.Acked && st.lose > 0 {
		st.lose--
		return true
	}
	st.acks = append(st.acks, a)
	if e := st.envs[a.EnvelopeID]; e != nil && !e.Acked {
		e.Acked = true
		st.acked++
	}
	if t := st.timers[a.EnvelopeID]; t != nil {
		t.Stop()
		delete(st.timers, a.EnvelopeID)
	}
	return false
}

// loseAck cuts c, whose ack of envelope id never reaches Slack, and sends the envelope again:
// on another open socket, or on the next one opened.
func (st *socketState) loseAck(c *sconn, id string) {
	st.cut(c)
	st.mu.Lock()
	e := st.envs[id]
	if t := st.timers[id]; t != nil {
		t.Stop()
		delete(st.timers, id)
	}
	closed := st.closed
	st.mu.Unlock()
	if !closed {
		st.redeliver(e, "timeout")
	}
}

// send queues e and writes what can be written.
func (st *socketState) send(e *Envelope) {
	st.mu.Lock()
	st.envs[e.ID] = e
	st.order = append(st.order, e)
	st.pending = append(st.pending, e)
	st.mu.Unlock()
	st.flush()
}

// flush writes pending envelopes to open sockets, round robin (as Slack spreads events over an
// app's connections).
func (st *socketState) flush() {
	for {
		st.mu.Lock()
		if len(st.pending) == 0 || len(st.conns) == 0 || st.closed {
			st.mu.Unlock()
			return
		}
		e := st.pending[0]
		st.pending = st.pending[1:]
		c := st.pickLocked()
		e.Conn = c.id
		msg := map[string]any{"type": e.Type, "envelope_id": e.ID, "payload": e.Payload,
			"accepts_response_payload": e.Type != "events_api", "retry_attempt": e.RetryAttempt, "retry_reason": e.RetryReason}
		st.armLocked(e)
		st.mu.Unlock()
		if err := c.write(msg); err != nil {
			// Lost with the socket, as on Slack: redelivery (if on) sends it again.
			st.drop(c)
		}
	}
}

func (st *socketState) pickLocked() *sconn {
	ids := make([]int, 0, len(st.conns))
	for id := range st.conns {
		ids = append(ids, id)
	}
	// Sorted for a deterministic round robin.
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	st.rr++
	return st.conns[ids[st.rr%len(ids)]]
}

func (st *socketState) armLocked(e *Envelope) {
	if st.redeliv <= 0 || e.RetryAttempt >= st.retries {
		return
	}
	id := e.ID
	st.timers[id] = time.AfterFunc(st.redeliv, func() {
		st.mu.Lock()
		delete(st.timers, id)
		acked := e.Acked || st.closed
		st.mu.Unlock()
		if !acked {
			st.redeliver(e, "timeout")
		}
	})
}

func (st *socketState) newID() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.seq++
	return fmt.Sprintf("env-%08d-fake", st.seq)
}

func (st *socketState) redeliver(e *Envelope, reason string) string {
	ne := &Envelope{ID: st.newID(), Type: e.Type, Payload: e.Payload, RetryAttempt: e.RetryAttempt + 1, RetryReason: reason}
	st.send(ne)
	return ne.ID
}

// Send sends an envelope of type typ (events_api, interactive, slash_commands) with payload
// over a socket (held until one is open) and returns its envelope id.
func (s *Server) Send(typ string, payload any) string {
	raw, err := json.Marshal(payload)
	if err != nil {
		panic("slackfake: payload does not marshal: " + err.Error())
	}
	e := &Envelope{ID: s.sock.newID(), Type: typ, Payload: raw}
	s.sock.send(e)
	return e.ID
}

// SendRaw writes data verbatim to every open socket (malformed frames, unknown types).
func (s *Server) SendRaw(data []byte) {
	s.sock.mu.Lock()
	conns := make([]*sconn, 0, len(s.sock.conns))
	for _, c := range s.sock.conns {
		conns = append(conns, c)
	}
	s.sock.mu.Unlock()
	for _, c := range conns {
		c.wmu.Lock()
		_ = c.ws.WriteMessage(websocket.TextMessage, data)
		c.wmu.Unlock()
	}
}

// Redeliver sends envelope id's payload again as a new envelope with retry_attempt one higher
// and retry_reason reason (e.g. "timeout"), and returns the new envelope id.
func (s *Server) Redeliver(id, reason string) string {
	s.sock.mu.Lock()
	e := s.sock.envs[id]
	s.sock.mu.Unlock()
	if e == nil {
		panic("slackfake: no envelope " + id)
	}
	return s.sock.redeliver(e, reason)
}

// Acked reports whether envelope id was acknowledged.
func (s *Server) Acked(id string) bool {
	s.sock.mu.Lock()
	defer s.sock.mu.Unlock()
	e := s.sock.envs[id]
	return e != nil && e.Acked
}

// Unacked is the number of envelopes sent or pending that were not acknowledged.
func (s *Server) Unacked() int {
	s.sock.mu.Lock()
	defer s.sock.mu.Unlock()
	return len(s.sock.envs) - s.sock.acked
}

// Acks returns every ack received, in order.
func (s *Server) Acks() []Ack {
	s.sock.mu.Lock()
	defer s.sock.mu.Unlock()
	return append([]Ack(nil), s.sock.acks...)
}

// Envelopes returns every envelope sent or pending, in the order they were made.
func (s *Server) Envelopes() []Envelope {
	s.sock.mu.Lock()
	defer s.sock.mu.Unlock()
	out := make([]Envelope, len(s.sock.order))
	for i, e := range s.sock.order {
		out[i] = *e
	}
	return out
}

// Connections is the number of sockets open now; Opened the number ever opened.
func (s *Server) Connections() int {
	s.sock.mu.Lock()
	defer s.sock.mu.Unlock()
	return len(s.sock.conns)
}

// Opened is the number of sockets opened since the start.
func (s *Server) Opened() int {
	s.sock.mu.Lock()
	defer s.sock.mu.Unlock()
	return s.sock.opened
}

// PeakConnections is the most sockets that were open at once since the start: a socket counts
// until the client closed it (on Linux, as soon as its close reached the kernel; elsewhere, once
// the server read it) or the server did.
func (s *Server) PeakConnections() int {
	s.sock.mu.Lock()
	defer s.sock.mu.Unlock()
	return s.sock.peak
}

// Disconnect sends {"type":"disconnect","reason":reason} to every open socket ("warning",
// "refresh_requested", "link_disabled", …) and closes each after the disconnect grace unless
// the client closed it first.
func (s *Server) Disconnect(reason string) {
	st := &s.sock
	st.mu.Lock()
	conns := make([]*sconn, 0, len(st.conns))
	for _, c := range st.conns {
		conns = append(conns, c)
	}
	grace := st.graceful
	st.mu.Unlock()
	for _, c := range conns {
		_ = c.write(map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "fake-slack"}})
		st.wg.Add(1)
		go func() {
			defer st.wg.Done()
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-t.C:
				st.drop(c)
			case <-c.done:
			}
		}()
	}
}

// DropSockets cuts every open socket's TCP connection without a close frame, as a network
// failure would.
func (s *Server) DropSockets() {
	s.sock.mu.Lock()
	conns := make([]*sconn, 0, len(s.sock.conns))
	for _, c := range s.sock.conns {
		conns = append(conns, c)
	}
	s.sock.mu.Unlock()
	for _, c := range conns {
		s.sock.cut(c)
	}
}

func (st *socketState) closeAll() {
	st.mu.Lock()
	st.closed = true
	conns := make([]*sconn, 0, len(st.conns))
	for _, c := range st.conns {
		conns = append(conns, c)
	}
	for id, t := range st.timers {
		t.Stop()
		delete(st.timers, id)
	}
	st.mu.Unlock()
	for _, c := range conns {
		st.drop(c)
	}
}

func (st *socketState) wait() { st.wg.Wait() }
