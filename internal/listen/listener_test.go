package listen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/internal/logbuf"
	"github.com/switchboard-bot/switchboard/internal/poll"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testHookCap is the body cap of the test webhook (a platform's 1 MiB, smaller).
const testHookCap = 64 << 10

// listenerUnderTest is a listener serving a test webhook at /hook (the adapters' shape: its
// body read through kit.ReadBody before its "signature", the X-Test-Signature header, is
// checked), /healthz, a health route at /readyz and /metrics.
type listenerUnderTest struct {
	t    *testing.T
	l    *Listener
	addr string
	reg  *prometheus.Registry
	logs *logbuf.Buffer
	// bodyBytes counts the bytes the webhook read of its bodies.
	bodyBytes atomic.Int64
	// hold, when set, is waited on by the webhook after its body (a hand-over that stalls);
	// entered gets a value as each request reaches it.
	hold    chan struct{}
	entered chan struct{}
	// ready answers /readyz; nil: 200.
	ready http.Handler
}

func startListener(t *testing.T, o Options, setup func(*listenerUnderTest)) *listenerUnderTest {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &listenerUnderTest{t: t, addr: ln.Addr().String(), reg: prometheus.NewRegistry(), logs: &logbuf.Buffer{},
		entered: make(chan struct{}, 64)}
	if setup != nil {
		setup(u)
	}
	log := slog.New(slog.NewJSONHandler(u.logs, nil))
	u.l, err = New(ln, o, log, u.reg)
	if err != nil {
		t.Fatal(err)
	}
	ready := u.ready
	if ready == nil {
		ready = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ready\n")) })
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("GET /readyz", u.l.Health("/readyz", ready))
	mux.Handle("GET /metrics", u.l.Health("/metrics", promhttp.HandlerFor(u.reg, promhttp.HandlerOpts{})))
	mux.Handle("POST /hook", u.l.Webhook("/hook", http.HandlerFunc(u.serveHook)))
	srv := u.l.Server(mux)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(u.l)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
		u.l.refusals.close() // as Shutdown would: no timer left behind
	})
	return u
}

// serveHook is the test webhook.
func (u *listenerUnderTest) serveHook(w http.ResponseWriter, r *http.Request) {
	r.Body = &countingReader{ReadCloser: r.Body, n: &u.bodyBytes}
	body, err := kit.ReadBody(w, r, testHookCap)
	if err != nil {
		kit.RefuseBody(w, err)
		return
	}
	if r.Header.Get("X-Test-Signature") != "good" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	u.entered <- struct{}{}
	if u.hold != nil {
		<-u.hold
	}
	fmt.Fprintf(w, "got %d bytes\n", len(body))
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// dial opens a raw connection to the listener, bounded by the test's own deadline.
func (u *listenerUnderTest) dial() net.Conn {
	u.t.Helper()
	c, err := net.Dial("tcp", u.addr)
	if err != nil {
		u.t.Fatal(err)
	}
	u.t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second)) // the test's bound, not a synchronization
	return c
}

// get is a GET on a fresh connection.
func (u *listenerUnderTest) get(path string) (int, string) {
	u.t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + u.addr + path)
	if err != nil {
		u.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// refused is the value of switchboard_http_refused_total for kind and path.
func (u *listenerUnderTest) refused(kind, path string) float64 {
	u.t.Helper()
	mfs, err := u.reg.Gather()
	if err != nil {
		u.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchboard_http_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["kind"] == kind && labels["path"] == path {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// readAnswer reads one response, its body included, from br.
func readAnswer(t *testing.T, br *bufio.Reader) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// closedWithin waits for the server to close c (reads end in EOF or a reset; what the server
// writes before, such as its 400 to headers that came too slowly, is skipped), failing past
// limit; it returns how long that took from start.
func closedWithin(t *testing.T, br *bufio.Reader, start time.Time, limit time.Duration) time.Duration {
	t.Helper()
	_, err := io.Copy(io.Discard, br)
	took := time.Since(start)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("connection still open after %s (read: %v)", took, err)
	}
	if took > limit {
		t.Fatalf("connection closed after %s, want within %s", took, limit)
	}
	return took
}

// shortListener are options that make the tests' waits short.
func shortListener() Options {
	return Options{
		ReadHeaderTimeout:  300 * time.Millisecond,
		ReadTimeout:        600 * time.Millisecond,
		WriteTimeout:       5 * time.Second,
		IdleTimeout:        400 * time.Millisecond,
		WebhookBodyTimeout: 300 * time.Millisecond,
		WebhookTimeout:     5 * time.Second,
		HealthTimeout:      5 * time.Second,
	}
}

// margin is what a test allows past a timeout for the server to act on it.
const margin = 1500 * time.Millisecond

// TestListenerDisconnectsAClientThatAnnouncesABodyAndSendsNothing: a client that announces a
// body and sends none of it is answered and disconnected within the body's deadline on a
// webhook (408), and within the server's read timeout on a route that reads no body — the
// first probe held such connections for ever.
func TestListenerDisconnectsAClientThatAnnouncesABodyAndSendsNothing(t *testing.T) {
	o := shortListener()
	u := startListener(t, o, nil)
	for _, tc := range []struct {
		name, path string
		length     int
		status     int
		within     time.Duration
	}{
		{"a webhook", "/hook", 1000, http.StatusRequestTimeout, o.WebhookBodyTimeout + margin},
		// Answered 404 at once; the server then reads what it can of the body to reuse the
		// connection, for ReadTimeout at most.
		{"a route that reads no body", "/nowhere", 1000, http.StatusNotFound, o.ReadTimeout + margin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := u.dial()
			start := time.Now()
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: bot\r\nX-Test-Signature: good\r\nContent-Length: %d\r\n\r\n", tc.path, tc.length)
			br := bufio.NewReader(c)
			if resp := readAnswer(t, br); resp.StatusCode != tc.status {
				t.Fatalf("answered %d, want %d", resp.StatusCode, tc.status)
			}
			closedWithin(t, br, start, tc.within)
		})
	}
	if n := u.refused(refusedTooSlow, "/hook"); n != 1 {
		t.Errorf("too_slow refusals counted: %v, want 1", n)
	}
}

// TestListenerDisconnectsASlowBodyClient: a client that sends its body a byte at a time, never
// finishing, is refused (408) and disconnected within the body's deadline; one that drips its
// headers is disconnected within the header timeout. The slow client is a goroutine writing
// slowly; the test waits for the server to close the connection.
func TestListenerDisconnectsASlowBodyClient(t *testing.T) {
	o := shortListener()
	u := startListener(t, o, nil)
	for _, tc := range []struct {
		name   string
		head   string // sent at once
		drip   string // then a byte every 20 ms
		status int    // 0: no answer expected, just the close
		within time.Duration
	}{
		{"slow body", "POST /hook HTTP/1.1\r\nHost: bot\r\nX-Test-Signature: good\r\nContent-Length: 10000\r\n\r\n",
			strings.Repeat("x", 10000), http.StatusRequestTimeout, o.WebhookBodyTimeout + margin},
		{"slow headers", "POST /hook HTTP/1.1\r\n", strings.Repeat("X-Slow: y\r\n", 1000), 0, o.ReadHeaderTimeout + margin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := u.dial()
			start := time.Now()
			if _, err := io.WriteString(c, tc.head); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			dripped := make(chan error, 1)
			go func() { // the slow client
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for i := 0; i < len(tc.drip); i++ {
					select {
					case <-stop:
						dripped <- nil
						return
					case <-tick.C:
					}
					if _, err := c.Write([]byte{tc.drip[i]}); err != nil {
						dripped <- err
						return
					}
				}
				dripped <- nil
			}()
			br := bufio.NewReader(c)
			if tc.status != 0 {
				if resp := readAnswer(t, br); resp.StatusCode != tc.status {
					t.Fatalf("answered %d, want %d", resp.StatusCode, tc.status)
				}
			}
			closedWithin(t, br, start, tc.within)
			close(stop)
			<-dripped
		})
	}
	if n := u.bodyBytes.Load(); n >= 10000 {
		t.Errorf("the webhook read %d bytes of a body it should have given up on", n)
	}
}

// TestListenerRefusesAnOversizedContentLengthUnread: a webhook request announcing a gigabyte
// is answered 413 at once, before its body's deadline, without a byte of it read, and its
// connection is closed (nothing is drained).
func TestListenerRefusesAnOversizedContentLengthUnread(t *testing.T) {
	o := shortListener()
	o.WebhookBodyTimeout = 10 * time.Second // so that an answer within it is "at once"
	u := startListener(t, o, nil)
	c := u.dial()
	start := time.Now()
	fmt.Fprintf(c, "POST /hook HTTP/1.1\r\nHost: bot\r\nContent-Length: %d\r\n\r\n{\"a\":", 1<<30)
	br := bufio.NewReader(c)
	resp := readAnswer(t, br)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("answered %d, want 413", resp.StatusCode)
	}
	if took := closedWithin(t, br, start, 2*time.Second); took >= o.WebhookBodyTimeout {
		t.Fatalf("refused after %s", took)
	}
	if n := u.bodyBytes.Load(); n != 0 {
		t.Fatalf("read %d bytes of the body", n)
	}
	if n := u.refused(refusedTooLarge, "/hook"); n != 1 {
		t.Fatalf("too_large refusals counted: %v, want 1", n)
	}
}

// TestListenerClosesIdleKeepAlives: a keep-alive connection left idle after its request is
// closed by the server after IdleTimeout, not before.
func TestListenerClosesIdleKeepAlives(t *testing.T) {
	o := shortListener()
	o.IdleTimeout = 500 * time.Millisecond
	u := startListener(t, o, nil)
	c := u.dial()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: bot\r\n\r\n")
	br := bufio.NewReader(c)
	if resp := readAnswer(t, br); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("answered %d (close: %v), want 200 and kept alive", resp.StatusCode, resp.Close)
	}
	idle := time.Now()
	if took := closedWithin(t, br, idle, o.IdleTimeout+margin); took < o.IdleTimeout*8/10 {
		t.Fatalf("closed after %s of idleness, before the idle timeout %s", took, o.IdleTimeout)
	}
}

// TestListenerHealthAnswersWhileWebhookCapacityIsFull: with every webhook slot held by a
// request whose hand-over stalls, another webhook request is refused at once with 503 and
// Retry-After, and /healthz, /readyz and /metrics still answer 200; once the hand-overs go on,
// each held request is answered.
func TestListenerHealthAnswersWhileWebhookCapacityIsFull(t *testing.T) {
	o := shortListener()
	o.WebhookCapacity = 4
	o.WebhookTimeout = 10 * time.Second // held, not answered for, while the test looks
	hold := make(chan struct{})
	u := startListener(t, o, func(u *listenerUnderTest) { u.hold = hold })
	post := func() (*http.Response, error) {
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodPost, "http://"+u.addr+"/hook", strings.NewReader(`{"event":1}`))
		req.Header.Set("X-Test-Signature", "good")
		resp, err := (&http.Client{Transport: tr, Timeout: 15 * time.Second}).Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	var held sync.WaitGroup
	codes := make(chan int, o.WebhookCapacity)
	for range o.WebhookCapacity {
		held.Go(func() {
			resp, err := post()
			if err != nil {
				t.Errorf("held request: %v", err)
				codes <- 0
				return
			}
			codes <- resp.StatusCode
		})
	}
	for range o.WebhookCapacity {
		select {
		case <-u.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the held requests did not reach the webhook")
		}
	}
	start := time.Now()
	resp, err := post()
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a webhook over capacity: %v %v, want 503 with Retry-After", resp, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the refusal over capacity took %s", took)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, _ := u.get(path); code != http.StatusOK {
			t.Errorf("%s answered %d while the webhooks are full", path, code)
		}
	}
	close(hold)
	held.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("a held request was answered %d once released, want 200", code)
		}
	}
	if n := u.refused(refusedOverCapacity, "/hook"); n != 1 {
		t.Errorf("over_capacity refusals counted: %v, want 1", n)
	}
}

// TestListenerConnectionLimitKeepsRoomForNewcomers: with every connection the listener allows
// held by clients that connected and send nothing, a health probe is still answered — the
// longest idle connection is closed to make room — and the closing is counted.
func TestListenerConnectionLimitKeepsRoomForNewcomers(t *testing.T) {
	o := shortListener()
	o.MaxConns = 8
	o.ReadHeaderTimeout = 10 * time.Second // the silent clients would stay for this long
	o.ReadTimeout = 10 * time.Second
	u := startListener(t, o, nil)
	silent := make([]net.Conn, o.MaxConns)
	for i := range silent {
		silent[i] = u.dial()
		n := i + 1
		poll.Until(t, "the listener to take the connection", func() bool { return u.l.conns.open() == n })
	}
	start := time.Now()
	if code, _ := u.get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz answered %d at the connection limit", code)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("/healthz took %s at the connection limit", took)
	}
	closedWithin(t, bufio.NewReader(silent[0]), start, 5*time.Second)
	if n := u.refused(refusedConnectionLimit, ""); n < 1 {
		t.Errorf("connection_limit refusals counted: %v, want at least 1", n)
	}
	if n := u.l.conns.open(); n > o.MaxConns {
		t.Errorf("%d connections open, limit %d", n, o.MaxConns)
	}
}

// TestListenerAnswersForAHandlerThatIgnoresItsContext: a webhook handler stuck in a call that
// does not honour its context (go-redis on a stalled Redis) is answered 503 with Retry-After by
// the listener AnswerGrace after WebhookTimeout; its slot stays taken until it returns.
func TestListenerAnswersForAHandlerThatIgnoresItsContext(t *testing.T) {
	stalled := redistest.NewStalled(t)
	client := redis.NewClient(&redis.Options{Addr: stalled.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	o := shortListener()
	o.WebhookTimeout, o.AnswerGrace, o.WebhookCapacity = 300*time.Millisecond, 100*time.Millisecond, 1
	var returned atomic.Bool
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(ln, o, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /hook", l.Webhook("/hook", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer returned.Store(true)
		if err := client.XAdd(r.Context(), &redis.XAddArgs{Stream: "s", Values: []string{"k", "v"}}).Err(); err != nil {
			http.Error(w, "try again", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})))
	srv := l.Server(mux)
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close(); <-served; l.refusals.close() })

	post := func() (*http.Response, time.Duration) {
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		start := time.Now()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Post("http://"+ln.Addr().String()+"/hook", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, time.Since(start)
	}
	resp, took := post()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || took > o.WebhookTimeout+o.AnswerGrace+margin {
		t.Fatalf("answered %d (Retry-After %q) after %s, want 503 with Retry-After within %s", resp.StatusCode,
			resp.Header.Get("Retry-After"), took, o.WebhookTimeout+o.AnswerGrace)
	}
	if returned.Load() {
		t.Fatal("the handler returned already: the test proves nothing")
	}
	if resp, _ := post(); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a second request while the first handler holds the only slot: %d, want 503", resp.StatusCode)
	}
	stalled.Close() // the stuck call fails at once; the handler returns and frees its slot
	poll.Until(t, "the stuck handler to return", returned.Load)
}

// TestListenerRouteLabelHidesSecretSegments: a path segment that may be a secret (a bot token
// in a webhook path) is not written into the refusals' metric or log lines.
func TestListenerRouteLabelHidesSecretSegments(t *testing.T) {
	for path, want := range map[string]string{
		"/slack/events":     "/slack/events",
		"/telegram/webhook": "/telegram/webhook",
		"/bot123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11/hook": "/…/hook",
		"/tg/" + strings.Repeat("a", 40):                     "/tg/…",
	} {
		if got := routeLabel(path); got != want {
			t.Errorf("routeLabel(%q) = %q, want %q", path, got, want)
		}
	}
}
