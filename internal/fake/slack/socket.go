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

// socketMode is Socket Mode's side of the sockets: the connections, the envelopes sent on them
// (or pending until one is open) with their redelivery, and the acks received.
type socketMode struct {
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

func newSocketMode() *socketMode {
	sm := &socketMode{}
	sm.conns = map[int]*sconn{}
	sm.envs = map[string]*Envelope{}
	sm.timers = map[string]*time.Timer{}
	sm.ping = 5 * time.Second
	sm.graceful = time.Second
	return sm
}

var upgrader = websocket.Upgrader{
	// slack-go sends Origin: https://api.slack.com; accept any origin.
	CheckOrigin: func(*http.Request) bool { return true },
}

// serve is a Socket Mode connection: hello, the envelopes pending and to come, and the client's
// acks until it or the fake ends it.
func (sm *socketMode) serve(w http.ResponseWriter, r *http.Request) {
	sm.mu.Lock()
	if sm.closed {
		sm.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	sm.wg.Add(1)
	sm.mu.Unlock()
	defer sm.wg.Done()
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c, n, ping := sm.open(ws)
	if c == nil {
		_ = ws.Close()
		return
	}
	hello := map[string]any{"type": "hello", "num_connections": n,
		"connection_info": map[string]any{"app_id": AppID},
		"debug_info":      map[string]any{"host": "fake-slack", "build_number": 1, "approximate_connection_time": 18060}}
	if err := c.write(hello); err != nil {
		sm.drop(c)
		return
	}
	if ping > 0 {
		sm.wg.Add(1)
		go sm.pinger(c, ping)
	}
	sm.flush()
	sm.readAcks(c)
}

// open counts ws as an open socket and returns its connection, the number of sockets open and
// the ping interval; a nil connection when the server closed meanwhile.
func (sm *socketMode) open(ws *websocket.Conn) (c *sconn, n int, ping time.Duration) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.closed {
		return nil, 0, 0
	}
	sm.opened++
	c = &sconn{id: sm.opened, ws: ws, done: make(chan struct{})}
	// A socket the client closed before it opened this one is not open alongside it, even
	// when the goroutine reading it has not seen the close yet.
	alongside := 1
	for _, o := range sm.conns {
		if !peerClosed(o.ws.NetConn()) {
			alongside++
		}
	}
	sm.conns[c.id] = c
	sm.peak = max(sm.peak, alongside)
	return c, len(sm.conns), sm.ping
}

// readAcks takes the client's acks on c until its connection ends.
func (sm *socketMode) readAcks(c *sconn) {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			sm.drop(c)
			return
		}
		var a struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(data, &a) != nil || a.EnvelopeID == "" {
			continue
		}
		if sm.ack(Ack{EnvelopeID: a.EnvelopeID, Payload: string(a.Payload), Conn: c.id, At: time.Now()}) {
			sm.loseAck(c, a.EnvelopeID)
		}
	}
}

func (sm *socketMode) pinger(c *sconn, every time.Duration) {
	defer sm.wg.Done()
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

func (sm *socketMode) drop(c *sconn) {
	sm.mu.Lock()
	delete(sm.conns, c.id)
	sm.mu.Unlock()
	c.close()
}

// cut drops c without a close frame, as a network failure would; it stops counting as open
// before its connection closes.
func (sm *socketMode) cut(c *sconn) {
	sm.mu.Lock()
	delete(sm.conns, c.id)
	sm.mu.Unlock()
	_ = c.ws.NetConn().Close()
	c.close()
}

// ack counts a; it reports instead that a is to be lost with its socket (LoseAcks), counting
// nothing, when it acknowledges an envelope not acked yet and acks are to be lost.
func (sm *socketMode) ack(a Ack) (lose bool) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if e := sm.envs[a.EnvelopeID]; e != nil && !e.Acked && sm.lose > 0 {
		sm.lose--
		return true
	}
	sm.acks = append(sm.acks, a)
	if e := sm.envs[a.EnvelopeID]; e != nil && !e.Acked {
		e.Acked = true
		sm.acked++
	}
	if t := sm.timers[a.EnvelopeID]; t != nil {
		t.Stop()
		delete(sm.timers, a.EnvelopeID)
	}
	return false
}

// loseAck cuts c, whose ack of envelope id never reaches Slack, and sends the envelope again:
// on another open socket, or on the next one opened.
func (sm *socketMode) loseAck(c *sconn, id string) {
	sm.cut(c)
	sm.mu.Lock()
	e := sm.envs[id]
	if t := sm.timers[id]; t != nil {
		t.Stop()
		delete(sm.timers, id)
	}
	closed := sm.closed
	sm.mu.Unlock()
	if !closed {
		sm.redeliver(e, "timeout")
	}
}

// send queues e and writes what can be written.
func (sm *socketMode) send(e *Envelope) {
	sm.mu.Lock()
	sm.envs[e.ID] = e
	sm.order = append(sm.order, e)
	sm.pending = append(sm.pending, e)
	sm.mu.Unlock()
	sm.flush()
}

// flush writes pending envelopes to open sockets, round robin (as Slack spreads events over an
// app's connections).
func (sm *socketMode) flush() {
	for {
		sm.mu.Lock()
		if len(sm.pending) == 0 || len(sm.conns) == 0 || sm.closed {
			sm.mu.Unlock()
			return
		}
		e := sm.pending[0]
		sm.pending = sm.pending[1:]
		c := sm.pickLocked()
		e.Conn = c.id
		msg := map[string]any{"type": e.Type, "envelope_id": e.ID, "payload": e.Payload,
			"accepts_response_payload": e.Type != "events_api", "retry_attempt": e.RetryAttempt, "retry_reason": e.RetryReason}
		sm.armLocked(e)
		sm.mu.Unlock()
		if err := c.write(msg); err != nil {
			// Lost with the socket, as on Slack: redelivery (if on) sends it again.
			sm.drop(c)
		}
	}
}

func (sm *socketMode) pickLocked() *sconn {
	ids := make([]int, 0, len(sm.conns))
	for id := range sm.conns {
		ids = append(ids, id)
	}
	// Sorted for a deterministic round robin.
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	sm.rr++
	return sm.conns[ids[sm.rr%len(ids)]]
}

func (sm *socketMode) armLocked(e *Envelope) {
	if sm.redeliv <= 0 || e.RetryAttempt >= sm.retries {
		return
	}
	id := e.ID
	sm.timers[id] = time.AfterFunc(sm.redeliv, func() {
		sm.mu.Lock()
		delete(sm.timers, id)
		acked := e.Acked || sm.closed
		sm.mu.Unlock()
		if !acked {
			sm.redeliver(e, "timeout")
		}
	})
}

func (sm *socketMode) newID() string {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.seq++
	return fmt.Sprintf("env-%08d-fake", sm.seq)
}

func (sm *socketMode) redeliver(e *Envelope, reason string) string {
	ne := &Envelope{ID: sm.newID(), Type: e.Type, Payload: e.Payload, RetryAttempt: e.RetryAttempt + 1, RetryReason: reason}
	sm.send(ne)
	return ne.ID
}

func (sm *socketMode) closeAll() {
	sm.mu.Lock()
	sm.closed = true
	conns := make([]*sconn, 0, len(sm.conns))
	for _, c := range sm.conns {
		conns = append(conns, c)
	}
	for id, t := range sm.timers {
		t.Stop()
		delete(sm.timers, id)
	}
	sm.mu.Unlock()
	for _, c := range conns {
		sm.drop(c)
	}
}

func (sm *socketMode) wait() { sm.wg.Wait() }
