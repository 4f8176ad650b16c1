package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/config"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	"github.com/switchboard-bot/switchboard/internal/listen"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// TestReadyzAnswers503WithinItsTimeoutWhenRedisStalls: with a Redis that accepts connections
// and never answers (measured: go-redis's Ping(ctx) does not return at ctx's deadline then),
// /readyz answers 503 naming Redis within its own 2 s, and within the listener's shorter health
// timeout when that is set; probes that come while a PING is in flight wait for that PING
// instead of sending theirs.
func TestReadyzAnswers503WithinItsTimeoutWhenRedisStalls(t *testing.T) {
	// Not parallel: it times /readyz against its bounds, and its cleanup waits on the process-wide readiness PINGs.
	stalled := redistest.NewStalled(t)
	client := redis.NewClient(&redis.Options{Addr: stalled.Addr()}) // the defaults, as production
	pings := redistest.CountTrips(client)
	a := &app{core: &core{redis: client}, leading: map[string]*atomic.Int64{}}
	a.intake.Store(true)
	t.Cleanup(func() {
		stalled.Close()
		waitFor(t, "the readiness PING to give up", 30*time.Second, func() bool { return !readinessPings.InFlight(client) })
		_ = client.Close()
	})

	// The measurement behind it: Ping(ctx) itself outlives ctx on a stalled Redis.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start := time.Now()
	_ = client.Ping(ctx).Err()
	cancel()
	t.Logf("go-redis Ping with a 200ms context on a stalled Redis returned after %s", time.Since(start).Round(time.Millisecond))

	t.Run("its own timeout", func(t *testing.T) {
		w := httptest.NewRecorder()
		start := time.Now()
		a.readyz(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		took := time.Since(start)
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "redis: unreachable") {
			t.Fatalf("answered %d %q, want 503 naming redis", w.Code, w.Body.String())
		}
		if took > 2*time.Second+500*time.Millisecond {
			t.Fatalf("answered after %s, want within its 2 s", took)
		}
	})
	t.Run("the listener's health timeout", func(t *testing.T) {
		// The other bounds are production's: a probe sends its request at once.
		o := listen.Options{HealthTimeout: 300 * time.Millisecond}
		base := serveReadyz(t, o, http.HandlerFunc(a.readyz))
		before := pings.Pings()
		var probes sync.WaitGroup
		for range 8 {
			probes.Go(func() {
				start := time.Now()
				code, body := readyzWithin(t, base+"/readyz")
				if took := time.Since(start); code != http.StatusServiceUnavailable || !strings.Contains(body, "redis") || took > o.HealthTimeout+margin {
					t.Errorf("/readyz answered %d %q after %s, want 503 naming redis within %s", code, body, took, o.HealthTimeout)
				}
			})
		}
		probes.Wait()
		if n := pings.Pings() - before; n > 1 {
			t.Errorf("%d PINGs sent for 8 probes while one was in flight, want at most 1", n)
		}
		if code, body := readyzWithin(t, base+"/healthz"); code != http.StatusOK {
			t.Errorf("/healthz answered %d %q while Redis stalls", code, body)
		}
	})
}

// margin is what a test allows past a timeout for the server to act on it (the listener's
// tests allow as much).
const margin = 1500 * time.Millisecond

// serveReadyz serves readyz at /readyz, within o's health budget, and /healthz on a listener of
// the bot's own kind (internal/listen), mounted as app.listen mounts them, until the test ends;
// it returns the base URL.
func serveReadyz(t *testing.T, o listen.Options, readyz http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := listen.New(ln, o, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	if err != nil {
		_ = ln.Close()
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("GET /readyz", l.Health("/readyz", readyz))
	srv := l.Server(mux)
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx) // as app.shutdown stops it: the refusals' last lines written, their timers stopped
		<-served
	})
	return "http://" + ln.Addr().String()
}

// freezingProxy forwards TCP connections to a target and can stall them: while stalled, it takes
// connections and bytes in but passes nothing on, as a Redis that stops answering does.
type freezingProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	open   chan struct{} // closed while bytes flow
	conns  []net.Conn
	done   chan struct{}
	wg     sync.WaitGroup
}

func newFreezingProxy(t *testing.T, target string) *freezingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{ln: ln, target: target, open: make(chan struct{}), done: make(chan struct{})}
	close(p.open)
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *freezingProxy) addr() string { return p.ln.Addr().String() }

func (p *freezingProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(up, c) })
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

// pipe copies src to dst, holding each chunk while the proxy is stalled.
func (p *freezingProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			open := p.open
			p.mu.Unlock()
			select {
			case <-open:
			case <-p.done:
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// stall stops the bytes; resume lets them (and those held) go on.
func (p *freezingProxy) stall() {
	p.mu.Lock()
	p.open = make(chan struct{})
	p.mu.Unlock()
}

func (p *freezingProxy) resume() {
	p.mu.Lock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
	p.mu.Unlock()
}

func (p *freezingProxy) close() {
	_ = p.ln.Close()
	close(p.done)
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestWebhookAnswers5xxWithinItsTimeoutWhenRedisStalls proves, through the whole app in Slack
// HTTP mode with the production listener options, that while Redis stalls (a proxy that stops
// passing bytes) a signed event is answered 5xx within Slack's 3 s — Slack retries it — and
// /readyz 503 within its 2 s, and that Slack's retry after Redis is back is handed over and
// answered once.
func TestWebhookAnswers5xxWithinItsTimeoutWhenRedisStalls(t *testing.T) {
	// Not parallel: it times the answers against Slack's and /readyz's bounds.
	proxy := newFreezingProxy(t, "127.0.0.1:6379") // first: closed after the app stops
	e := newSlackE2E(t, func(c *config.Config) {
		c.Slack.Mode, c.Slack.AppToken = config.SlackHTTP, ""
		c.Redis.URL = "redis://" + proxy.addr() + "/0"
	})
	r := e.start()
	base := "http://" + r.listener.Addr().String()
	events := base + e.cfg.Slack.EventsPath
	msg := func(text string) map[string]any {
		return e.sl.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": "D0ANN", "user": slackAnn,
			"text": text, "ts": e.sl.NewTS(), "team": slackfake.TeamID})
	}
	if resp, err := e.sl.DeliverEvent(events, msg("before"), slackfake.Delivery{}); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("a delivery before the stall: %d %v", resp.Status, err)
	}
	e.waitSlackAnswers("D0ANN", "", 1)

	proxy.stall()
	during := msg("during the stall")
	var wg sync.WaitGroup
	wg.Go(func() {
		start := time.Now()
		code, body := readyzWithin(t, base+"/readyz")
		if took := time.Since(start); code != http.StatusServiceUnavailable || took > 2500*time.Millisecond {
			t.Errorf("/readyz while Redis stalls: %d %q after %s, want 503 within 2 s", code, body, took)
		}
	})
	resp, err := e.sl.DeliverEvent(events, during, slackfake.Delivery{})
	if err != nil || resp.Status < 500 || resp.Took > 3*time.Second {
		t.Errorf("a signed event while Redis stalls: %d after %s (%v), want 5xx within Slack's 3 s", resp.Status, resp.Took, err)
	}
	t.Logf("answered %d after %s while Redis stalled", resp.Status, resp.Took.Round(time.Millisecond))
	wg.Wait()

	proxy.resume()
	waitFor(t, "Slack's retry to be taken", 30*time.Second, func() bool {
		resp, err := e.sl.DeliverEvent(events, during, slackfake.Delivery{RetryNum: 1, RetryReason: "http_error"})
		return err == nil && resp.Status == http.StatusOK
	})
	got := e.waitSlackAnswers("D0ANN", "", 2)
	if !strings.Contains(slackVisible(got[1]), "echo: during the stall") {
		t.Fatalf("the answer after the stall: %q", slackVisible(got[1]))
	}
}

// readyzWithin is a GET of /readyz with a client timeout well past the answer expected.
func readyzWithin(t *testing.T, url string) (int, string) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
