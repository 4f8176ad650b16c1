package slack

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// connState is one Socket Mode connection's life.
type connState struct {
	id        int
	lastFrame atomic.Int64 // unix nanos of the last bytes read from its socket
	// ackSeq and writeSeq order the last ack queued and the last write to the socket on one
	// clock (seq), so Stop can wait for queued acks to be written before closing.
	ackSeq, writeSeq atomic.Int64
	hello            chan struct{}
	helloOnce        sync.Once
	// refused is closed when Slack refuses the app token (Start gives up at once).
	refused     chan struct{}
	refusedOnce sync.Once
	mu          sync.Mutex
	err         error
	// up and hellos are the connection's state as its consumer saw it (one consumer at a time).
	up     bool
	hellos int
}

func newConnState(i int) *connState {
	return &connState{id: i + 1, hello: make(chan struct{}), refused: make(chan struct{})}
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

// liveConn marks every read on a socket as a sign of life: Slack's pings arrive every few
// seconds, so a socket that has read nothing for a while is dead whatever its state says.
type liveConn struct {
	net.Conn
	cs  *connState
	now func() time.Time
}

// seq is the clock of connState.ackSeq and writeSeq.
var seq atomic.Int64

func (l liveConn) Write(p []byte) (int, error) {
	n, err := l.Conn.Write(p)
	if n > 0 {
		l.cs.writeSeq.Store(seq.Add(1))
	}
	return n, err
}

// flushed reports whether the socket was written to since the last ack was queued.
func (cs *connState) flushed() bool { return cs.writeSeq.Load() > cs.ackSeq.Load() }

func (l liveConn) Read(p []byte) (int, error) {
	n, err := l.Conn.Read(p)
	if n > 0 {
		l.cs.lastFrame.Store(l.now().UnixNano())
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

// runSocket holds one Socket Mode connection: a slack-go client whose RunContext (which itself
// reconnects on Slack's disconnect, closing the old socket before dialing the new one) is
// started again with capped backoff whenever it returns with an error (a failed
// apps.connections.open, revoked token, …). Envelopes are read until readCtx ends; the socket
// closes when connCtx ends.
func (c *Channel) runSocket(readCtx, connCtx context.Context, cs *connState) {
	defer c.loops.Done()
	defer c.connDown(cs)
	dialer := &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: 10 * time.Second,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return liveConn{Conn: conn, cs: cs, now: c.now}, nil
		},
	}
	failures := 0
	for connCtx.Err() == nil {
		sm := socketmode.New(c.api, socketmode.OptionDialer(dialer), socketmode.OptionReadLimit(maxPayloadBytes+64<<10))
		runCtx, cancelRun := context.WithCancel(connCtx)
		var consumer sync.WaitGroup
		hellos := cs.hellos
		consumer.Go(func() { c.consume(readCtx, runCtx, cancelRun, sm, cs) })
		err := sm.RunContext(runCtx)
		cancelRun()
		consumer.Wait()
		if connCtx.Err() != nil {
			return
		}
		if cs.hellos > hellos {
			failures = 0 // it was connected: this is a new outage, not a longer one
		}
		if errors.Is(err, context.Canceled) {
			err = cs.lastError() // our own cut of slack-go's long backoff: say why it backed off
		}
		failures++
		err = c.apiError("apps.connections.open", err)
		cs.setError(err)
		if errors.Is(err, ErrAuth) {
			cs.refusedOnce.Do(func() { close(cs.refused) })
		}
		wait := reconnectBackoff(failures)
		c.log.Warn("slack: socket mode connection ended; reconnecting", "connection", cs.id, "err", err, "wait", wait, "failures", failures)
		if c.sleep(connCtx, wait) != nil {
			return
		}
	}
}

func (c *Channel) connDown(cs *connState) {
	if cs.up {
		cs.up = false
		c.cfg.Metrics.Connection(cs.id, false)
	}
}

// consume reads the client's events until readCtx or runCtx ends, handing each envelope over.
func (c *Channel) consume(readCtx, runCtx context.Context, cancelRun context.CancelFunc, sm *socketmode.Client, cs *connState) {
	for {
		select {
		case <-readCtx.Done():
			return
		case <-runCtx.Done():
			return
		case ev := <-sm.Events:
			switch ev.Type {
			case socketmode.EventTypeConnecting:
				c.connDown(cs)
			case socketmode.EventTypeHello:
				cs.lastFrame.Store(c.now().UnixNano())
				cs.setError(nil)
				cs.helloOnce.Do(func() { close(cs.hello) })
				if cs.hellos++; cs.hellos > 1 {
					c.cfg.Metrics.Reconnect()
				}
				if !cs.up {
					cs.up = true
					c.cfg.Metrics.Connection(cs.id, true)
				}
				c.log.Debug("slack: socket mode hello", "connection", cs.id)
			case socketmode.EventTypeConnectionError:
				if e, ok := ev.Data.(*slackgo.ConnectionErrorEvent); ok {
					cs.setError(c.redact.error(errors.New(e.Error())))
					if e.Backoff > maxReconnectWait {
						// slack-go would wait up to 5 minutes; start over on our own, capped, backoff.
						cancelRun()
						return
					}
				}
			case socketmode.EventTypeEventsAPI, socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
				if ev.Request != nil {
					c.envelope(readCtx, sm, cs, *ev.Request)
				}
			case socketmode.EventTypeErrorBadMessage:
				// slack-go could not parse it (e.g. one block it does not know): read it ourselves.
				if bad, ok := ev.Data.(*socketmode.ErrorBadMessage); ok {
					var req socketmode.Request
					if json.Unmarshal(bad.Message, &req) == nil && req.EnvelopeID != "" {
						c.envelope(readCtx, sm, cs, req)
						continue
					}
				}
				c.malformed("socket", errors.New("unreadable socket mode message"))
			}
		}
	}
}

// envelope decodes one envelope and hands it over in its conversation's lane; the ack goes out
// once the Handler returned nil. A malformed or ignored envelope is acked at once (Slack would
// send it again and again, as unreadable every time).
func (c *Channel) envelope(ctx context.Context, sm *socketmode.Client, cs *connState, req socketmode.Request) {
	ack := func() {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		defer cancel()
		cs.ackSeq.Store(seq.Add(1))
		if err := sm.AckCtx(actx, req.EnvelopeID, nil); err != nil {
			c.cfg.Metrics.Ack("failed")
			c.log.Warn("slack: ack failed; Slack will redeliver", "envelope", req.EnvelopeID, "err", err)
			return
		}
		c.cfg.Metrics.Ack("acked")
	}
	d, err := c.decodeDelivery(req.Type, req.Payload)
	if err != nil {
		c.malformed(req.Type, err)
		ack()
		return
	}
	if d.skip {
		ack()
		return
	}
	var once sync.Once
	ackOnce := func() { once.Do(ack) }
	var deadline *time.Timer
	if req.Type != typeEvents {
		// A click or a command not acknowledged within 3 s shows the user an error, and a modal
		// can only open in that time: one whose handling runs longer is acknowledged anyway.
		deadline = time.AfterFunc(c.ackDeadline, ackOnce)
	}
	c.lanes.run(d.in.Conv.String(), func() {
		err := c.deliver(ctx, d)
		inTime := deadline == nil || deadline.Stop()
		switch {
		case err != nil && !inTime:
			c.log.Warn("slack: the handler failed on an interaction already acknowledged; the user can try again",
				"envelope", req.EnvelopeID, "type", req.Type, "err", err)
		case err != nil:
			c.cfg.Metrics.Ack("refused")
			c.log.Warn("slack: the handler refused an envelope; not acked, Slack will redeliver",
				"envelope", req.EnvelopeID, "type", req.Type, "retry_attempt", req.RetryAttempt, "err", err)
		default:
			ackOnce()
		}
	})
}

// interactionAckDeadline is when an interaction or a command is acknowledged even though its
// handling has not finished (Slack's limit is 3 s).
const interactionAckDeadline = 2500 * time.Millisecond
