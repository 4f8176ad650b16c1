package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// The gateway client is the adapter's own: discordgo v0.29.0 resumes on the generic gateway URL
// instead of READY's resume_gateway_url, reconnects forever after fatal closes (4004, 4014), and
// sleeps a second on every close. This one resumes on resume_gateway_url after a resumable close
// (1001, 1006, 4000–4003, 4005, 4008, op 7, op 9 true), re-identifies after a non-resumable one
// (4007, 4009, op 9 false), and stops on a fatal one (4004, 4010–4014), which Ready then reports.
// Events are decoded with discordgo's types.

// errFatal wraps gateway closes that reconnecting cannot cure.
var errFatal = errors.New("discord: the gateway refused the connection")

// ErrIntentDisallowed is wrapped by Start's error when Discord refuses the privileged message
// content intent (close 4014).
var ErrIntentDisallowed = errors.New("discord: the gateway refused the message content intent — turn on \"Message Content Intent\" " +
	"under Bot → Privileged Gateway Intents in the Discord Developer Portal, or set discord.message_content: false " +
	"(with discord.thread_replies: mention) to answer mentions and DMs only")

// closeError describes a close code for the operator and says what to do next.
func closeError(code int, text string) (err error, resumable bool) {
	switch code {
	case 4004:
		return fmt.Errorf("discord: gateway closed 4004 (authentication failed): %w: %w", channels.ErrUnauthorized, errFatal), false
	case 4014:
		return fmt.Errorf("%w: %w", ErrIntentDisallowed, errFatal), false
	case 4011:
		return fmt.Errorf("discord: gateway closed 4011 (sharding required): set discord.shard_count (and discord.shard_id per process): %w", errFatal), false
	case 4010, 4012, 4013:
		return fmt.Errorf("discord: gateway closed %d (%s): %w", code, text, errFatal), false
	case 4007, 4009:
		return fmt.Errorf("discord: gateway closed %d (%s): session not resumable", code, text), false
	}
	return fmt.Errorf("discord: gateway closed %d (%s)", code, text), true
}

// errResume and errReidentify end a connection on purpose.
var (
	errResume     = errors.New("discord: reconnecting to resume")
	errReidentify = errors.New("discord: reconnecting to identify")
	errZombie     = errors.New("discord: no heartbeat ack; reconnecting to resume")
)

// gateway is one shard's connection to Discord's gateway, reconnecting until its context ends.
type gateway struct {
	c          *Channel
	baseURL    string // from GET /gateway/bot, without query
	dialer     *websocket.Dialer
	shardID    int
	shardCount int // 0 or 1: unsharded

	mu        sync.Mutex
	ws        *websocket.Conn
	sessionID string
	resumeURL string
	seq       int64
	fatal     error

	pmu     sync.Mutex
	pending map[int64]struct{} // sequence numbers of messages not handed over yet

	connected  atomic.Bool
	everReady  atomic.Bool  // a READY arrived on some connection of this gateway
	lastEvent  kit.Liveness // the last frame read (on the channel's clock), which Ready reads
	interval   atomic.Int64 // the heartbeat interval HELLO announced, in nanoseconds
	identifies atomic.Int64
	resumes    atomic.Int64
}

func (g *gateway) session() (id, resumeURL string, seq int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sessionID, g.resumeURL, g.seq
}

func (g *gateway) forget() {
	g.mu.Lock()
	g.sessionID, g.resumeURL, g.seq = "", "", 0
	g.mu.Unlock()
}

// run connects and reconnects until ctx ends or a fatal close. ready receives the outcome of the
// first connection (nil once READY arrived) exactly once.
func (g *gateway) run(ctx context.Context, ready chan<- error) {
	first := true
	report := func(err error) {
		if first {
			first = false
			ready <- err
		}
	}
	backoff := g.c.cfg.ReconnectMin
	for {
		healthy, err := g.connect(ctx, func() { report(nil) })
		g.connected.Store(false)
		if ctx.Err() != nil {
			report(ctx.Err())
			return
		}
		if errors.Is(err, errFatal) {
			g.mu.Lock()
			g.fatal = err
			g.mu.Unlock()
			g.c.cfg.Logger.Error("discord: gateway stopped", "err", err)
			report(err)
			return
		}
		if first {
			report(err) // Start fails rather than retrying a first connection that never worked
			return
		}
		if healthy {
			backoff = g.c.cfg.ReconnectMin
		}
		g.c.cfg.Logger.Warn("discord: gateway connection ended; reconnecting", "shard", g.shardID, "err", err, "in", backoff)
		if g.c.clock.Sleep(ctx, backoff) != nil {
			return
		}
		if !healthy {
			backoff = min(2*backoff, 60*time.Second)
		}
	}
}

// connect makes one connection and serves it until it ends. healthy reports whether it got as
// far as READY or RESUMED. onReady is called on READY (and on a first connection's RESUMED).
func (g *gateway) connect(ctx context.Context, onReady func()) (healthy bool, err error) {
	sid, resumeURL, seq := g.session()
	// Identifies, unlike resumes, are paced (max_concurrency per IdentifyInterval): one that
	// will identify takes its slot before it dials, so that it does not hold a connection open
	// unidentified meanwhile; a RESUME that fails takes one before identifying instead.
	var slot time.Time
	if sid == "" {
		at, err := g.c.pace.wait(ctx)
		if err != nil {
			return false, err
		}
		slot = at
	}
	ws, err := g.dial(ctx, sid, resumeURL)
	if err != nil {
		return false, err
	}
	stop := context.AfterFunc(ctx, func() {
		// 1000 ends the session for good; with a SessionStore it is kept for the next process,
		// and any other code leaves it resumable.
		code := websocket.CloseNormalClosure
		if g.c.cfg.Sessions != nil {
			code = 4000
		}
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
		_ = ws.Close()
	})
	defer stop()
	defer ws.Close()
	cn := &gwConn{g: g, ws: ws, slot: slot, beat: make(chan struct{}, 1)}
	cn.acked.Store(true)
	if err := cn.hello(); err != nil {
		return false, err
	}
	if sid != "" {
		g.resumes.Add(1)
		err = cn.send(map[string]any{"op": opResume, "d": map[string]any{"token": g.c.cfg.Token, "session_id": sid, "seq": seq}})
	} else {
		err = cn.identify(ctx)
	}
	if errors.Is(err, errFatal) {
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("discord: gateway handshake: %s", g.c.redact.String(err.Error()))
	}
	stopBeats := cn.heartbeat()
	defer stopBeats()
	return cn.serve(ctx, seq, onReady)
}

// dial opens the websocket: to resumeURL when resuming session sid, else to the gateway URL.
func (g *gateway) dial(ctx context.Context, sid, resumeURL string) (*websocket.Conn, error) {
	target := g.baseURL
	if sid != "" && resumeURL != "" {
		target = resumeURL
	}
	u := strings.TrimRight(target, "/") + "/?v=" + gatewayVersion + "&encoding=json"
	dialCtx, cancel := context.WithTimeout(ctx, g.c.cfg.CallTimeout)
	ws, resp, err := g.dialer.DialContext(dialCtx, u, http.Header{})
	cancel()
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if sid != "" {
			// The resume host may be gone: start over on the generic URL.
			g.forget()
		}
		return nil, fmt.Errorf("discord: dial gateway: %s", g.c.redact.String(err.Error()))
	}
	ws.SetReadLimit(16 << 20)
	g.mu.Lock()
	g.ws = ws
	g.mu.Unlock()
	return ws, nil
}

// gwConn is one gateway connection while it is served.
type gwConn struct {
	g        *gateway
	ws       *websocket.Conn
	wmu      sync.Mutex
	slot     time.Time     // the identify slot taken before dialing; zero once spent
	interval time.Duration // the heartbeat interval HELLO announced
	// acked: the last heartbeat was acknowledged; zombie: one was not when the next was due.
	acked, zombie atomic.Bool
	beat          chan struct{} // Discord asked for a heartbeat now (op 1)
}

// send writes one payload, one write at a time.
func (cn *gwConn) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	_ = cn.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return cn.ws.WriteMessage(websocket.TextMessage, b)
}

// hello reads the connection's first message, op 10 HELLO, within CallTimeout.
func (cn *gwConn) hello() error {
	g := cn.g
	_ = cn.ws.SetReadDeadline(time.Now().Add(g.c.cfg.CallTimeout))
	_, data, err := cn.ws.ReadMessage()
	if err != nil {
		return g.readError(err)
	}
	interval, err := decodeHello(data)
	if err != nil {
		return err
	}
	cn.interval = interval
	g.interval.Store(int64(interval))
	g.lastEvent.Beat(g.c.clock.Now())
	return nil
}

// identify sends IDENTIFY in a paced slot (the one taken before dialing, or a new one), within
// the bot's session start budget.
func (cn *gwConn) identify(ctx context.Context) error {
	g := cn.g
	if cn.slot.IsZero() {
		at, err := g.c.pace.wait(ctx)
		if err != nil {
			return err
		}
		cn.slot = at
	}
	at := cn.slot
	cn.slot = time.Time{} // one slot, one IDENTIFY
	if err := g.c.budget.take(g.everReady.Load()); err != nil {
		return err
	}
	g.identifies.Add(1)
	if f := g.c.onIdentify; f != nil {
		f(g.shardID, at)
	}
	d := map[string]any{
		"token": g.c.cfg.Token, "intents": g.c.cfg.Intents,
		"properties": map[string]string{"os": "linux", "browser": "switchboard", "device": "switchboard"},
	}
	if g.shardCount > 1 {
		d["shard"] = [2]int{g.shardID, g.shardCount}
	}
	return cn.send(map[string]any{"op": opIdentify, "d": d})
}

// heartbeat beats on its own goroutine, the first after interval×jitter, then every interval
// (or at once when Discord asks); a beat whose predecessor was not acknowledged means a zombie
// connection, closed to resume. The returned func stops it and waits for it.
func (cn *gwConn) heartbeat() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTimer(time.Duration(rand.Float64() * float64(cn.interval)))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				t.Reset(cn.interval)
				if !cn.acked.Swap(false) {
					cn.zombie.Store(true)
					_ = cn.ws.Close()
					return
				}
			case <-cn.beat:
			}
			cn.g.mu.Lock()
			s := cn.g.seq
			cn.g.mu.Unlock()
			var d any
			if s > 0 {
				d = s
			}
			if cn.send(map[string]any{"op": opHeartbeat, "d": d}) != nil {
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// serve reads the connection until it ends: dispatches go to the Channel, READY and RESUMED
// mark it healthy, and Discord's requests (heartbeat, reconnect, invalid session) are honoured.
// seq is the sequence a RESUME asked from.
func (cn *gwConn) serve(ctx context.Context, seq int64, onReady func()) (healthy bool, err error) {
	g := cn.g
	for {
		// Discord sends at least heartbeat acks within each interval; a silent socket is dead.
		_ = cn.ws.SetReadDeadline(time.Now().Add(silenceBound(cn.interval)))
		_, data, err := cn.ws.ReadMessage()
		if err != nil {
			if cn.zombie.Load() {
				return healthy, errZombie
			}
			return healthy, g.readError(err)
		}
		g.lastEvent.Beat(g.c.clock.Now())
		f, err := decodeFrame(data)
		if err != nil {
			g.c.dispatcher.malformed("gateway frame", err)
			continue
		}
		switch f.Op {
		case opDispatch:
			if err := cn.dispatch(f, seq, onReady); err != nil {
				return healthy, err
			}
			healthy = healthy || f.T == "READY" || f.T == "RESUMED"
		case opHeartbeat:
			select {
			case cn.beat <- struct{}{}:
			default:
			}
		case opHeartbeatAck:
			cn.acked.Store(true)
		case opReconnect:
			return healthy, errResume
		case opInvalidSession:
			if err := cn.invalidSession(ctx, f.D); err != nil {
				return healthy, err
			}
		}
	}
}

// dispatch takes one op 0 event: READY and RESUMED (the connection is up), or an event for the
// Channel.
func (cn *gwConn) dispatch(f frame, seq int64, onReady func()) error {
	g := cn.g
	if f.S > 0 {
		g.mu.Lock()
		g.seq = f.S
		g.mu.Unlock()
	}
	switch f.T {
	case "READY":
		r, err := decodeReady(f.D)
		if err != nil {
			return err
		}
		g.mu.Lock()
		g.sessionID, g.resumeURL = r.SessionID, r.ResumeURL
		g.mu.Unlock()
		g.c.bot.set(r.User.ID, r.Application.ID)
		g.connected.Store(true)
		g.everReady.Store(true)
		g.c.cfg.Logger.Info("discord: gateway ready", "bot", r.User.ID, "shard", g.shardID)
		if f := g.c.cfg.OnConnect; f != nil {
			f(g.shardID, false)
		}
		onReady()
	case "RESUMED":
		g.connected.Store(true)
		onReady() // a first connection may resume a saved session
		g.c.cfg.Logger.Info("discord: gateway resumed", "seq", seq, "shard", g.shardID)
		if f := g.c.cfg.OnConnect; f != nil {
			f(g.shardID, true)
		}
	default:
		g.c.dispatcher.dispatch(g, f.S, f.T, f.D)
	}
	return nil
}

// invalidSession honours op 9: resume when Discord says the session may be resumed, else
// identify again after the pause Discord asks for (1–5 s). An error ends the connection.
func (cn *gwConn) invalidSession(ctx context.Context, d json.RawMessage) error {
	g := cn.g
	resumable, err := decodeInvalidSession(d)
	if err != nil {
		g.c.dispatcher.malformed("invalid session", err) // and identify again, the safe reading
	}
	if resumable {
		return errResume
	}
	g.forget()
	if err := g.c.clock.Sleep(ctx, g.c.cfg.InvalidSessionWait); err != nil {
		return err
	}
	if err := cn.identify(ctx); errors.Is(err, errFatal) {
		return err
	} else if err != nil {
		return errReidentify
	}
	return nil
}

// silenceBound is how long a connection may go without an inbound frame: Discord acknowledges
// each heartbeat (one an interval), so two intervals of silence, with slack for a slow ack,
// mean the connection is dead.
func silenceBound(interval time.Duration) time.Duration { return 2*interval + 10*time.Second }

// silence reports how long the gateway has received nothing, and whether that is longer than
// silenceBound of its heartbeat interval.
func (g *gateway) silence(now time.Time) (quiet, interval time.Duration, dead bool) {
	interval = time.Duration(g.interval.Load())
	quiet, ok := g.lastEvent.Quiet(now)
	if interval <= 0 || !ok {
		return 0, interval, false
	}
	return quiet, interval, quiet > silenceBound(interval)
}

// readError classifies the error that ended a connection; a non-resumable close forgets the
// session so the next connection identifies.
func (g *gateway) readError(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		e, resumable := closeError(ce.Code, ce.Text)
		if !resumable {
			g.forget()
		}
		return e
	}
	return fmt.Errorf("discord: gateway read: %s", g.c.redact.String(err.Error()))
}

func (g *gateway) fatalErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fatal
}

// identifyBudget keeps the bot within Discord's session start limit (1,000 identifies a day
// for most bots): past it Discord resets the bot's token. It starts from what GET /gateway/bot
// reports and keeps a margin; when the budget is spent, the gateway stops with an error that
// says when the limit resets, instead of identifying again.
type identifyBudget struct {
	mu        sync.Mutex
	remaining int
	resetAt   time.Time
	now       func() time.Time
}

// identifyMargin is left unspent by reconnects, for the operator's own restarts (a first
// identify may spend it).
const identifyMargin = 2

func (b *identifyBudget) set(remaining int, resetAfter time.Duration, now func() time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.remaining, b.now = remaining, now
	b.resetAt = now().Add(resetAfter)
}

func (b *identifyBudget) take(reconnect bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.now == nil {
		return nil // not set: no limit known
	}
	if !b.now().Before(b.resetAt) {
		return nil // the window Discord reported has passed; Discord will say at the next start
	}
	keep := 0
	if reconnect {
		keep = identifyMargin
	}
	if b.remaining <= keep {
		return fmt.Errorf("discord: the daily session start limit is nearly used up (%d left; it resets in %s); "+
			"not identifying again, as Discord resets the token of a bot that exceeds it: %w",
			b.remaining, b.resetAt.Sub(b.now()).Round(time.Second), errFatal)
	}
	b.remaining--
	return nil
}
