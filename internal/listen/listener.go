// Package listen is the bot's one HTTP listener: health, metrics and the platforms' webhooks on
// one port open to anyone, with bounds on what any client can hold there — the server's
// timeouts, a connection limit that sheds the longest idle, a budget of concurrent requests per
// kind of route, a deadline on a webhook's body, an answer of its own when a handler is late —
// and its refusals counted and logged at a bounded rate. cmd/bot mounts the routes; what they
// answer is theirs.
package listen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Options are the HTTP listener's limits; a zero field takes its default (see
// withDefaults, which says why each is what it is), so the zero Options are production's.
// Tests shorten them.
//
// The webhook bodies' size caps are the adapters' (each platform's bound, read through
// kit.ReadBody): 1 MiB each. Slack publishes no maximum for what it posts; what it can put in
// one request is bounded by its message and view limits (text truncated past 40,000
// characters, 50 blocks a message and 100 a view, 3,000 characters a section), a few hundred
// KiB at most, and Slack's own Bolt for JavaScript refuses bodies past 4 MB by default since
// v5.1.0 (slackapi/bolt-js#3057: "legitimate requests from Slack should be well under this").
// Telegram publishes none either; an update carries at most a message of 4,096 characters (a
// caption of 1,024) with its entities, the message it replies to, and a keyboard of 100
// buttons: tens of KiB. Discord publishes none; an interaction carries at most a message of
// 2,000 characters (4,000 from Nitro users) with 10 embeds of 6,000 in all, 40 components of
// 4,000 characters, a modal's inputs and the objects a select of 25 resolves: a few hundred KiB
// at the very most. 1 MiB leaves each a margin of several times, and bounds what
// WebhookCapacity requests can hold at once.
type Options struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	MaxConns          int

	WebhookBodyTimeout time.Duration
	WebhookTimeout     time.Duration
	WebhookCapacity    int
	HealthTimeout      time.Duration
	HealthCapacity     int
	AnswerGrace        time.Duration

	RefusalLogEvery time.Duration
}

// withDefaults fills the zero fields with the production defaults.
func (o Options) withDefaults() Options {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	setInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	// The request line and headers: platforms send them at once; 5 s allows a slow network
	// and still drops a client that drips its headers.
	set(&o.ReadHeaderTimeout, 5*time.Second)
	// The whole request, body included, on every route: the backstop behind WebhookBodyTimeout,
	// and the bound on draining a body sent to a route that reads none.
	set(&o.ReadTimeout, 10*time.Second)
	// From the end of the headers to the end of the answer: above every handler's own bound (an
	// install callback exchanging its code with Slack is the longest), so it only drops a client
	// that does not read its answer.
	set(&o.WriteTimeout, 15*time.Second)
	// A keep-alive connection between requests: longer than a load balancer's (AWS ALB: 60 s),
	// so that the balancer closes idle connections, not the bot (a balancer sending on a
	// connection the bot just closed answers its client 502). At MaxConns the idlest go first.
	set(&o.IdleTimeout, 75*time.Second)
	// Platforms send under a KiB of headers (signature, timestamp, retry count) plus what a
	// proxy adds; Go's default would let every connection hold 1 MiB of them.
	setInt(&o.MaxHeaderBytes, 32<<10)
	// Open connections: below the smallest file limit in common use (1,024, the soft limit of
	// systemd services and many containers), leaving room for Redis's pool (10 per CPU), the
	// platforms' API connections and files. Platforms need few: Telegram opens at most 40 per
	// bot by default (setWebhook max_connections, 1-100).
	setInt(&o.MaxConns, 512)
	// From a webhook's headers to the end of its body: platforms send it with the headers, and
	// after 2 s the answer Slack and Discord wait 3 s for is late anyway.
	set(&o.WebhookBodyTimeout, 2*time.Second)
	// A webhook handler's context, which the router's enqueue runs under: the hand-over must be
	// done by then, or answered 5xx. Slack wants an answer within 3 s and retries a 5xx or a
	// timeout 3 times (at once, after a minute, after five); Discord fails an interaction not
	// answered within 3 s (the adapter defers it after 2 s); Telegram retries an unsuccessful
	// delivery. 500 ms is left for AnswerGrace and the network.
	set(&o.WebhookTimeout, 2500*time.Millisecond)
	// Webhook requests in handlers at once, all platforms together; beyond, 503 with
	// Retry-After at once. Telegram holds at most 40 connections by default, Slack and Discord
	// post an event at a time; each request may hold a 1 MiB body, so bodies in memory stay
	// under 64 MiB whatever the senders do.
	setInt(&o.WebhookCapacity, 64)
	// /readyz and /metrics: their context (/readyz has its own 2 s too); a stalled Redis must
	// not hold a probe past a kubelet's or Prometheus's patience.
	set(&o.HealthTimeout, 2*time.Second)
	// /readyz and /metrics at once: probes and scrapes come a few a period. A budget of their
	// own, so webhook floods cannot take it; /healthz is in no budget, it waits on nothing.
	setInt(&o.HealthCapacity, 16)
	// How long after a handler's context ended the listener waits for its answer before
	// answering 503 itself: a handler whose calls honour the context answers its own 5xx in
	// that time; one whose calls do not (go-redis on a stalled connection: the client is made
	// without ContextTimeoutEnabled) finishes in the background, keeping its slot.
	set(&o.AnswerGrace, 250*time.Millisecond)
	// At most one WARN line per kind of refusal in this time, with the count since the last.
	set(&o.RefusalLogEvery, time.Minute)
	return o
}

// Listener is the process's one HTTP listener: health, metrics and the platforms' webhooks
// on one port, open to anyone. It bounds what any client can hold: every connection by the
// server's timeouts and MaxHeaderBytes; all of them by MaxConns (the longest idle goes first);
// webhook requests, which are unauthenticated until their body is read and checked, by a body
// deadline, the platform's size cap (the adapters', through kit.ReadBody) and a budget of their
// own, so they cannot starve /healthz, /readyz and /metrics; and the time a handler may take
// before the listener answers for it. Its refusals are counted and logged at a bounded rate.
//
// A Listener is the net.Listener its server is served on: connections are accepted through it
// so that the connection limit sees each one, and requests are tracked on them.
type Listener struct {
	opts     Options
	conns    *connLimit
	refusals *refusalLog

	webhookBudget, healthBudget budget
}

// New wraps ln (which it then owns) and registers the refusal counter,
// switchboard_http_refused_total{kind,path}, on reg (taking the one registered already, if
// any). Guard the routes with Webhook, Page and Health, make the server for the mux with
// Server, and Serve it on the Listener; log is where the refusals' lines go (slog.Default when
// nil).
func New(ln net.Listener, o Options, log *slog.Logger, reg prometheus.Registerer) (*Listener, error) {
	o = o.withDefaults()
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_http_refused_total",
		Help: "Requests and connections the HTTP listener refused, by kind (bad_signature, too_large, too_slow, over_capacity, handover_timeout, connection_limit) and path.",
	}, []string{"kind", "path"})
	if err := reg.Register(counter); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			counter = are.ExistingCollector.(*prometheus.CounterVec)
		} else {
			return nil, fmt.Errorf("http: registering switchboard_http_refused_total: %w", err)
		}
	}
	l := &Listener{
		opts:          o,
		refusals:      newRefusalLog(log, o.RefusalLogEvery, counter),
		webhookBudget: budget{slots: make(chan struct{}, o.WebhookCapacity), timeout: o.WebhookTimeout, bodyTimeout: o.WebhookBodyTimeout},
		healthBudget:  budget{slots: make(chan struct{}, o.HealthCapacity), timeout: o.HealthTimeout},
	}
	l.conns = &connLimit{Listener: ln, max: o.MaxConns, conns: map[*trackedConn]struct{}{},
		onRefuse: func(remote string) { l.refusals.refuse(refusedConnectionLimit, "", remote) }}
	return l, nil
}

var _ net.Listener = (*Listener)(nil)

// Accept returns the next connection, closing the longest idle one (or the newcomer) at
// MaxConns; each connection so closed is counted as a connection_limit refusal.
func (l *Listener) Accept() (net.Conn, error) { return l.conns.Accept() }

// Addr is the address ln listens on.
func (l *Listener) Addr() net.Addr { return l.conns.Addr() }

// Close closes ln; the server's Shutdown and Close call it. Connections already accepted stay
// the server's to close.
func (l *Listener) Close() error { return l.conns.Close() }

// Server makes the server for h, with the listener's timeouts; Serve it on l (served on ln
// itself, it would escape the connection limit, and no request would keep its connection from
// being shed). Its Shutdown writes the refusals counted since the last line.
func (l *Listener) Server(h http.Handler) *http.Server {
	srv := &http.Server{
		Handler:           l.track(h),
		ReadHeaderTimeout: l.opts.ReadHeaderTimeout,
		ReadTimeout:       l.opts.ReadTimeout,
		WriteTimeout:      l.opts.WriteTimeout,
		IdleTimeout:       l.opts.IdleTimeout,
		MaxHeaderBytes:    l.opts.MaxHeaderBytes,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*trackedConn); ok {
				return context.WithValue(ctx, trackedConnKey{}, tc)
			}
			return ctx
		},
	}
	srv.RegisterOnShutdown(l.refusals.close)
	return srv
}

// Webhook guards a platform's webhook handler mounted at path: the webhook budget (503 and
// Retry-After at once when it is full), the body's deadline (kit.ReadBody then refuses a late
// body with 408), the handler's context (WebhookTimeout: the router's enqueue runs under it),
// and a 503 from the listener when the handler has not answered AnswerGrace later — Slack and
// Telegram retry it, and Discord's interactions are deferred by the adapter before. The
// handler's refusals (401, 408, 413) are counted and logged at a bounded rate. path names the
// route in the refusals' metric and log lines, a segment that may be a secret hidden (routeLabel);
// the guards of Health and Page name theirs alike.
func (l *Listener) Webhook(path string, h http.Handler) http.Handler {
	return l.guard(path, &l.webhookBudget, h)
}

// Health guards /readyz or /metrics: the health budget, HealthTimeout, and the listener's 503
// AnswerGrace after it.
func (l *Listener) Health(path string, h http.Handler) http.Handler {
	return l.guard(path, &l.healthBudget, h)
}

// Page guards a page browsers follow (the Slack install and its callback): it takes a slot of
// the webhook budget (it is as open to anyone) but no deadline of its own; the server's bound
// it.
func (l *Listener) Page(path string, h http.Handler) http.Handler {
	path = routeLabel(path)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !l.take(w, r, path, &l.webhookBudget) {
			return
		}
		defer func() { <-l.webhookBudget.slots }()
		h.ServeHTTP(w, r)
	})
}

// routeLabel is how a route's path is named in the refusals' metric and log lines: as it is,
// but for a segment that may be a secret (a bot token in a webhook's path, as Telegram once
// advised: anything past 32 characters or outside letters, digits, '.', '_' and '-'), shown
// as "…".
func routeLabel(path string) string {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if len(seg) > 32 || strings.ContainsFunc(seg, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
		}) {
			segs[i] = "…"
		}
	}
	return strings.Join(segs, "/")
}
