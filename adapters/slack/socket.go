package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// connState is one Socket Mode connection's life.
type connState struct {
	id        int
	lastFrame kit.Liveness // the last bytes read from its socket, which Ready reads
	hello     chan struct{}
	helloOnce sync.Once
	// refused is closed when Slack refuses the app token (Start gives up at once).
	refused     chan struct{}
	refusedOnce sync.Once
	// ended is closed when this process gives the connection's slot up (handed back to
	// another process, lost, or stopped).
	ended chan struct{}
	mu    sync.Mutex
	err   error
	// up and hellos are the connection's state as its loop saw it (one loop per connection).
	up     bool
	hellos int
}

func newConnState(i int) *connState {
	return &connState{id: i + 1, hello: make(chan struct{}), refused: make(chan struct{}), ended: make(chan struct{})}
}

func (cs *connState) setError(err error) {
	cs.mu.Lock()
	cs.err = err
	cs.mu.Unlock()
}

func (cs *connState) lastError() error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.err
}

// connected waits for the connection's first hello; it is nil then, or when the slot was
// handed back to another process before it connected (or Start's ctx ended, which Start
// reports), and otherwise the connection's last error, or wait's when it had none.
func (cs *connState) connected(wait context.Context) error {
	select {
	case <-cs.hello:
	case <-cs.refused:
	case <-cs.ended:
	case <-wait.Done():
	}
	select {
	case <-cs.hello:
		return nil
	case <-cs.ended:
		return nil
	default:
	}
	if err := cs.lastError(); err != nil {
		return err
	}
	return wait.Err()
}

// liveConn marks every read on a socket as a sign of life: Slack's pings arrive every few
// seconds, so a socket that has read nothing for a while is dead whatever its state says.
type liveConn struct {
	net.Conn
	cs  *connState
	now func() time.Time
}

func (l liveConn) Read(p []byte) (int, error) {
	n, err := l.Conn.Read(p)
	if n > 0 {
		l.cs.lastFrame.Beat(l.now())
	}
	return n, err
}

// maxReconnectWait caps the wait between connection attempts.
const maxReconnectWait = 30 * time.Second

// reconnectBackoff is the wait after the n-th consecutive failure of a connection's run: 1 s
// doubling to maxReconnectWait.
func reconnectBackoff(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < maxReconnectWait; i++ {
		d *= 2
	}
	return min(d, maxReconnectWait)
}

// Socket Mode's protocol limits, as slack-go's client keeps them.
const (
	// pingTimeout: Slack pings every few seconds; a socket that read nothing for this long is
	// dead, and a new one is opened.
	pingTimeout = 30 * time.Second
	// writeTimeout bounds one write to the socket (an ack, a pong).
	writeTimeout = 10 * time.Second
	// maxFrameBytes bounds one frame: a payload and its envelope.
	maxFrameBytes = maxPayloadBytes + 64<<10
)

// errReconnectAsked: Slack sent a disconnect (refresh_requested, warning, …); a new socket is
// opened at once.
var errReconnectAsked = errors.New("slack: socket mode: Slack asked for a new connection")

// errLinkDisabled: Slack's disconnect said link_disabled — Socket Mode was switched off in the
// app's settings. Reconnecting at once cannot work until someone switches it on again, so the
// connection backs off as after a failed open, and the log says what to do.
var errLinkDisabled = errors.New("slack: socket mode: Slack turned Socket Mode off for this app (link_disabled): " +
	"switch it on in the app's settings (Socket Mode), or set slack.mode: http")

// runSocket holds one Socket Mode connection: apps.connections.open (slack-go), then the
// websocket, read here until it ends — Slack's disconnect, a dropped socket, no ping for
// pingTimeout — and opened again: at once after a socket that got its hello, after a capped
// backoff (1 s doubling to 30 s, or Slack's Retry-After) when opening or dialing failed.
// Envelopes are handed over until readCtx ends; the socket closes when connCtx ends.
//
// The frames are read here rather than by slack-go's socketmode client, which parses every
// event into its types before handing it over: the adapter decodes each payload itself (see
// callback), so that was a second parse of every event, and a whole event lost over one block
// slack-go cannot read.
func (sk *sockets) runSocket(readCtx, connCtx context.Context, cs *connState) {
	defer sk.connDown(cs)
	dialer := &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: 10 * time.Second,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return liveConn{Conn: conn, cs: cs, now: sk.clock.Now}, nil
		},
	}
	failures := 0
	for connCtx.Err() == nil {
		hellos := cs.hellos
		err := sk.session(readCtx, connCtx, dialer, cs)
		sk.connDown(cs)
		if connCtx.Err() != nil {
			return
		}
		if cs.hellos > hellos && !errors.Is(err, errLinkDisabled) {
			// It was connected: open a new socket at once, as Slack asks on disconnect.
			failures = 0
			if errors.Is(err, errReconnectAsked) {
				sk.log.Debug("slack: socket mode reconnecting as Slack asked", "connection", cs.id)
			} else {
				sk.log.Info("slack: socket mode connection lost; reconnecting", "connection", cs.id, "err", err)
			}
			continue
		}
		failures++
		err = sk.web.apiError("apps.connections.open", err)
		cs.setError(err)
		if errors.Is(err, ErrAuth) {
			cs.refusedOnce.Do(func() { close(cs.refused) })
		}
		wait := reconnectBackoff(failures)
		if rl, ok := errors.AsType[*channels.RateLimitError](err); ok {
			wait = max(wait, rl.RetryAfter)
		}
		sk.log.Warn("slack: socket mode connection ended; reconnecting", "connection", cs.id, "err", err, "wait", wait, "failures", failures)
		if sk.clock.Sleep(connCtx, wait) != nil {
			return
		}
	}
}

func (sk *sockets) connDown(cs *connState) {
	if cs.up {
		cs.up = false
		sk.cfg.Metrics.Connection(cs.id, false)
	}
}

// frame is a Socket Mode message from Slack: hello, disconnect, or an envelope.
type frame struct {
	Type         string          `json:"type"`
	EnvelopeID   string          `json:"envelope_id"`
	Payload      json.RawMessage `json:"payload"`
	RetryAttempt int             `json:"retry_attempt"`
	RetryReason  string          `json:"retry_reason"`
	Reason       string          `json:"reason"` // a disconnect's
}

// decodeFrame reads one Socket Mode message: its payload is kept raw for decodeCallback (or the
// interaction's or command's decoder). Its errors are encoding/json's, which say what is wrong.
func decodeFrame(data []byte) (frame, error) {
	var f frame
	err := json.Unmarshal(data, &f)
	return f, err
}

// socket is one open websocket; acks are written from the lanes, one at a time.
type socket struct {
	conn *websocket.Conn
	mu   sync.Mutex
}

// ack writes the acknowledgement of envelope id.
func (s *socket) ack(id string) error {
	b, err := json.Marshal(struct {
		EnvelopeID string `json:"envelope_id"`
	}{id})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	return s.conn.WriteMessage(websocket.TextMessage, b)
}

// session opens one socket and reads it until it ends, handing envelopes over while readCtx
// lives; it returns why it ended.
func (sk *sockets) session(readCtx, connCtx context.Context, dialer *websocket.Dialer, cs *connState) error {
	openCtx, cancel := context.WithTimeout(connCtx, sk.cfg.CallTimeout)
	_, url, err := sk.api.StartSocketModeContext(openCtx)
	cancel()
	if err != nil {
		return err
	}
	conn, resp, err := dialer.DialContext(connCtx, url, http.Header{"Origin": {"https://api.slack.com"}})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return fmt.Errorf("slack: socket mode: dial: %w", sk.redact.Error(err))
	}
	defer conn.Close()
	// Stop closes the socket (after the acks) to end the read below.
	defer context.AfterFunc(connCtx, func() { _ = conn.Close() })()
	conn.SetReadLimit(maxFrameBytes)
	conn.SetPingHandler(func(data string) error {
		_ = conn.SetReadDeadline(time.Now().Add(sk.pingTimeout))
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeTimeout))
		if err != nil && !errors.Is(err, websocket.ErrCloseSent) {
			return err
		}
		return nil
	})
	sock := &socket{conn: conn}
	for {
		_ = conn.SetReadDeadline(time.Now().Add(sk.pingTimeout))
		_, data, err := conn.ReadMessage()
		if err != nil {
			return fmt.Errorf("slack: socket mode: read: %w", err)
		}
		f, err := decodeFrame(data)
		if err != nil {
			sk.dispatcher.malformed("socket", fmt.Errorf("%w: unreadable socket mode message: %w", errMalformed, err))
			continue
		}
		switch f.Type {
		case "hello":
			cs.lastFrame.Beat(sk.clock.Now())
			cs.setError(nil)
			cs.helloOnce.Do(func() { close(cs.hello) })
			if cs.hellos++; cs.hellos > 1 {
				sk.cfg.Metrics.Reconnect()
			}
			if !cs.up {
				cs.up = true
				sk.cfg.Metrics.Connection(cs.id, true)
			}
			sk.log.Debug("slack: socket mode hello", "connection", cs.id)
		case "disconnect":
			if f.Reason == "link_disabled" {
				return errLinkDisabled
			}
			return fmt.Errorf("%w (%s)", errReconnectAsked, f.Reason)
		case typeEvents, typeInteractive, typeSlash:
			if f.EnvelopeID == "" {
				sk.dispatcher.malformed("socket", fmt.Errorf("%w: %s envelope without an id", errMalformed, f.Type))
				continue
			}
			if readCtx.Err() != nil {
				continue // stopping: not taken, so not acknowledged; Slack delivers it again
			}
			sk.envelope(readCtx, sock, f)
		default:
			sk.dispatcher.malformed("socket", fmt.Errorf("%w: socket mode message type %q", errMalformed, f.Type))
		}
	}
}

// envelope decodes one envelope and hands it over in its conversation's lane; the ack goes out
// once the Handler returned nil. A malformed or ignored envelope is acked at once (Slack would
// send it again and again, as unreadable every time); an uninstall the install store could not
// record is not, so that Slack delivers it again.
func (sk *sockets) envelope(ctx context.Context, sock *socket, req frame) {
	ack := func() {
		if err := sock.ack(req.EnvelopeID); err != nil {
			sk.cfg.Metrics.Ack("failed")
			sk.log.Warn("slack: ack failed; Slack will redeliver", "envelope", req.EnvelopeID, "err", err)
			return
		}
		sk.cfg.Metrics.Ack("acked")
	}
	d, err := sk.dispatcher.decodeDelivery(req.Type, req.Payload)
	req.Payload = nil // decoded: not held while the envelope waits in its lane
	if err != nil {
		sk.dispatcher.malformed(req.Type, err)
		ack()
		return
	}
	if d.skip {
		if d.refused != nil {
			sk.cfg.Metrics.Ack("refused")
			sk.log.Warn("slack: an envelope could not be handled; not acked, Slack will redeliver",
				"envelope", req.EnvelopeID, "type", req.Type, "retry_attempt", req.RetryAttempt, "err", d.refused)
			return
		}
		ack()
		return
	}
	var once sync.Once
	ackOnce := func() { once.Do(ack) }
	var deadline *time.Timer
	if req.Type != typeEvents {
		// A click or a command not acknowledged within 3 s shows the user an error, and a modal
		// can only open in that time: one whose handling runs longer is acknowledged anyway.
		deadline = time.AfterFunc(sk.dispatcher.ackDeadline, ackOnce)
	}
	sk.dispatcher.lanes.Run(d.in.Conv.String(), func() {
		err := sk.dispatcher.deliver(ctx, d)
		inTime := deadline == nil || deadline.Stop()
		switch {
		case err != nil && !inTime:
			sk.log.Warn("slack: the handler failed on an interaction already acknowledged; the user can try again",
				"envelope", req.EnvelopeID, "type", req.Type, "err", err)
		case err != nil:
			sk.cfg.Metrics.Ack("refused")
			sk.log.Warn("slack: the handler refused an envelope; not acked, Slack will redeliver",
				"envelope", req.EnvelopeID, "type", req.Type, "retry_attempt", req.RetryAttempt, "err", err)
		default:
			ackOnce()
		}
	})
}

// interactionAckDeadline is when an interaction or a command is acknowledged even though its
// handling has not finished (Slack's limit is 3 s).
const interactionAckDeadline = 2500 * time.Millisecond
