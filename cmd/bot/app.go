package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboard-bot/switchboard/adapters/telegram"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/delivery"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/channels/router"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/intake"
	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/internal/listen"
	"github.com/switchboard-bot/switchboard/internal/redisping"
	"github.com/switchboard-bot/switchboard/render"
)

// app is one whole Switchboard process: the core, the router and delivery, the worker pool, the
// channels and the HTTP listener. start brings it up; shutdown takes it down in order: stop
// intake → hand the workers' runs back (shared Redis) or drain them (deadline) → stop the
// channels → close the rest.
type app struct {
	cfg      *config.Config
	log      *slog.Logger
	core     *core
	metrics  *metrics
	router   *router.Router
	delivery *delivery.Delivery
	pool     *runs.Pool
	chans    []channels.Channel
	// files are the channels that download what users send, by platform; filled by
	// buildRouting before the workers start (the team reads it from then on).
	files    fileFetchers
	webhooks map[string]http.Handler // path (or "GET path") → handler, mounted on the HTTP listener

	intake   atomic.Bool // false once shutdown begins: inbound is refused for redelivery
	listener net.Listener
	server   *http.Server

	// leading says, per platform whose intake is held through a lease, whether this process
	// holds it now (for /readyz; the metric is switchboard_intake_leader). Written by build only.
	leading map[string]*atomic.Int64

	// rateLogs log each platform's rate limits once a minute; start runs them until shutdown.
	rateLogs  []*kit.RateLimitLog
	stopLogs  context.CancelFunc
	logsGroup sync.WaitGroup

	// chores is work a channel asked for off its receiving goroutine (a Slack workspace's
	// purge on uninstall); shutdown waits for it, within its deadline, once the channels stopped.
	chores *kit.Followups
}

// rateLimitLog makes platform's rate-limit log, run from start to shutdown.
func (a *app) rateLimitLog(platform string) *kit.RateLimitLog {
	l := a.metrics.rateLimitLog(platform, a.log.With("channel", platform))
	a.rateLogs = append(a.rateLogs, l)
	return l
}

// errShuttingDown refuses inbound during shutdown so the platform redelivers it elsewhere.
var errShuttingDown = errors.New("shutting down: not accepting new messages")

// newApp builds the process. extra channels (the console) are added to the configured ones.
// On failure everything it opened is closed again.
func newApp(ctx context.Context, cfg *config.Config, log *slog.Logger, extra ...channels.Channel) (*app, error) {
	a := &app{cfg: cfg, log: log, metrics: newMetrics(), webhooks: map[string]http.Handler{}, leading: map[string]*atomic.Int64{}}
	if err := a.build(ctx, extra); err != nil {
		a.closeCore()
		return nil, err
	}
	return a, nil
}

// build is newApp's work; on error the caller closes what it opened.
func (a *app) build(ctx context.Context, extra []channels.Channel) (err error) {
	cfg, log := a.cfg, a.log
	a.files = fileFetchers{}
	a.core, err = newCore(ctx, cfg, log, coreHooks{
		fetch:       a.files.fetch,
		wrap:        func(p llm.Provider) llm.Provider { return countingProvider{p, a.metrics} },
		onRecovery:  func(kind runs.Recovery, n int) { a.metrics.recoveries.WithLabelValues(string(kind)).Add(float64(n)) },
		toolMetrics: newToolMetrics(a.metrics.reg),
	})
	if err != nil {
		return err
	}
	a.metrics.watch(a.core)
	a.chores = kit.NewFollowups()
	key, err := render.NewKey(actionSecret(a.core))
	if err != nil {
		return err
	}

	a.chans = append(a.chans, extra...)
	if cfg.Telegram.Token != "" {
		tg, err := a.newTelegram(key)
		if err != nil {
			return err
		}
		a.chans = append(a.chans, tg)
	}
	if cfg.Slack.BotToken != "" || cfg.Slack.ClientID != "" {
		sl, err := a.newSlack(key)
		if err != nil {
			return err
		}
		a.chans = append(a.chans, sl)
	}
	if cfg.Discord.Token != "" {
		dc, err := newDiscord(cfg, log, key, a.metrics, newDiscordSessions(a.core.redis, cfg.Redis.Prefix, cfg.Discord.Token), discordHooks{
			// Each shard is held through a lease: the processes sharing this Redis split the
			// shards, and take a dead one's over, resuming its saved session.
			lease: intake.NewLease(a.core.redis, cfg.Redis.Prefix), owner: a.core.queue.Options().Consumer,
			onLease: a.onLease("discord"), onTakeover: a.onTakeover("discord"), rateLimits: a.rateLimitLog("discord"),
		})
		if err != nil {
			return err // the adapter's errors name it already
		}
		if cfg.Discord.PublicKey != "" {
			a.webhooks[discordInteractionsPath] = dc.InteractionsHandler()
		}
		a.chans = append(a.chans, dc)
	}
	if len(a.chans) == 0 {
		return errors.New("no channel is configured: set telegram.token, slack.bot_token or discord.token, or use `bot chat`")
	}

	if err := a.buildRouting(key); err != nil {
		return err
	}
	a.pool, err = a.core.queue.NewPool(a.metrics.instrument(a.core.team), a.delivery)
	return err
}

// newTelegram builds the Telegram channel: polling through a lease and an inbox shared by the
// processes on this Redis, or a webhook served on the listener.
func (a *app) newTelegram(key render.Key) (*telegram.Channel, error) {
	cfg, log := a.cfg, a.log
	tcfg := telegram.Config{
		Token:         cfg.Telegram.Token,
		APIURL:        cfg.Telegram.APIURL,
		Mode:          telegram.Mode(cfg.Telegram.Mode),
		WebhookURL:    cfg.Telegram.WebhookURL,
		WebhookSecret: cfg.Telegram.WebhookSecret,
		Pacing:        cfg.Telegram.Pacing,
		Drafts:        cfg.Telegram.Drafts,
		Offsets:       intake.NewOffsets(a.core.redis, cfg.Redis.Prefix, botID(cfg.Telegram.Token)),
		RateLimits:    a.rateLimitLog("telegram"),
		TypingAfter:   kit.DefaultTypingAfter,
		Logger:        log.With("channel", "telegram"),
		ActionKey:     key,
		// An update the adapter skipped as malformed is an inbound event that became no run.
		OnMalformedUpdate: func() { a.metrics.refused.WithLabelValues("telegram", "malformed").Inc() },
	}
	if cfg.Telegram.Mode != config.TelegramWebhook {
		// Telegram serves one poller per bot: the processes sharing this Redis take turns
		// through a lease; the offset above lets each poller go on where the last stopped.
		tcfg.Lease = intake.NewLease(a.core.redis, cfg.Redis.Prefix)
		// Each fetched batch is kept in one XADD and confirmed by the next poll at once; the
		// hand-over to the router follows (a new poller first hands over what was kept).
		tcfg.Inbox = telegramInbox{intake.NewInbox(a.core.redis, cfg.Redis.Prefix, botID(cfg.Telegram.Token), log.With("channel", "telegram"))}
		tcfg.LeaseOwner = a.core.queue.Options().Consumer
		tcfg.OnLease = a.onLease("telegram")
		tcfg.OnTakeover = a.onTakeover("telegram")
	}
	tg, err := telegram.New(tcfg)
	if err != nil {
		return nil, err // the adapter's errors name it already
	}
	if cfg.Telegram.Mode == config.TelegramWebhook {
		u, err := url.Parse(cfg.Telegram.WebhookURL)
		if err != nil {
			return nil, fmt.Errorf("telegram.webhook_url: %w", err)
		}
		a.webhooks[webhookPath(u.Path)] = tg.WebhookHandler()
	}
	return tg, nil
}

// buildRouting builds the router (the channels' inbound messages to runs) and delivery (run
// events back to the channels).
func (a *app) buildRouting(key render.Key) error {
	cfg, log := a.cfg, a.log
	byName := map[string]channels.Channel{}
	for _, ch := range a.chans {
		byName[ch.Name()] = ch
		if f, ok := ch.(channels.FileFetcher); ok {
			a.files[ch.Name()] = f
		}
	}
	access := map[string]router.AccessPolicy{}
	admins := map[string][]string{}
	for _, p := range config.Platforms() {
		if acc, ok := cfg.AccessFor(p); ok {
			access[p] = router.AccessPolicy{Policy: acc.Policy, Allow: acc.Allow, DM: acc.DM}
		}
		admins[p] = cfg.AdminsFor(p)
	}
	// The person at the terminal owns the console.
	admins["console"] = append(admins["console"], "local")
	mx := routerMetrics{a.metrics}
	var err error
	a.router, err = router.New(router.Options{
		Queue: a.core.queue, Signer: a.core.signer,
		Inbox: a.core.threads.Inbox(), Clarifications: a.core.threads.Clarifications(), Threads: a.core.threads.Conversations(),
		Access: access, Admins: admins, MaxMessageChars: cfg.Runs.MaxMessageChars,
		ActionKey: key, Workers: cfg.Runs.Workers, Logger: log, Metrics: mx, Tools: a.core.toolsInfo(), Places: placesOf(a.core.profiles),
	})
	if err != nil {
		return err
	}
	a.delivery, err = delivery.New(delivery.Options{
		Channels: byName, Records: a.core.threads.Records(), ActionKey: key, Logger: log, Metrics: mx, PlaceholderAfter: cfg.Runs.PlaceholderAfter,
		MaxAnswerMessages: cfg.Runs.MaxAnswerMessages,
		EditEvery:         map[string]time.Duration{"telegram": time.Second, "slack": time.Second, "discord": time.Second, "console": 0},
		// chat.appendStream is Tier 4 (100+ a minute per workspace): one append a second per
		// answer, the deltas between coalesced.
		// A Telegram draft is a request like an edit: one a second at most.
		StreamEvery: map[string]time.Duration{"slack": time.Second, "telegram": time.Second},
	})
	return err
}

// onLease records, for /readyz and the switchboard_intake_* metrics, how many of platform's
// intake leases this process holds; the function it returns is called with true when one is
// taken and false when one is given up.
func (a *app) onLease(platform string) func(bool) {
	held := &atomic.Int64{}
	a.leading[platform] = held
	leader := a.metrics.intakeLeader.WithLabelValues(platform)
	leases := a.metrics.intakeLeases.WithLabelValues(platform)
	leader.Set(0)
	leases.Set(0)
	a.metrics.leaseTakeovers.WithLabelValues(platform)
	return func(on bool) {
		d := int64(-1)
		if on {
			d = 1
		}
		n := held.Add(d)
		leases.Set(float64(n))
		if n > 0 {
			leader.Set(1)
		} else {
			leader.Set(0)
		}
	}
}

// onTakeover counts an intake lease of platform taken after another process held it.
func (a *app) onTakeover(platform string) func() {
	c := a.metrics.leaseTakeovers.WithLabelValues(platform)
	return func() {
		c.Inc()
		a.log.Info("intake lease taken over from another process", "platform", platform)
	}
}

// actionSecret derives the key that signs interactive ids from the run-signing key, so every
// process that verifies runs also verifies clicks, without another secret to configure.
func actionSecret(c *core) []byte { return derive(c.signingKey, "switchboard interactive ids v1") }

// derive is a 32-byte key for one purpose, from the signing key (HMAC-SHA256 of the purpose):
// the interactive ids' key, the Slack OAuth state key.
func derive(key []byte, purpose string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(purpose))
	return mac.Sum(nil)
}

// botID is the public part of a Telegram token (the bot's user id), never the secret part.
func botID(token string) string {
	id, _, _ := strings.Cut(token, ":")
	return id
}

func webhookPath(p string) string {
	if p == "" {
		return "/telegram/webhook"
	}
	return p
}

// HandleInbound gates the router: once shutdown begins, nothing new is accepted.
func (a *app) HandleInbound(ctx context.Context, ch channels.Channel, in channels.Inbound) error {
	if !a.intake.Load() {
		return errShuttingDown
	}
	return a.router.HandleInbound(ctx, ch, in)
}

// start brings the process up: the HTTP listener, then the channels, then the workers. Workers
// come last because runs left queued in Redis by a stopped process are delivered through the
// channels at once, and a channel can only send once it has started (Telegram: getMe). Inbound
// arriving before the workers start just waits in the queue.
func (a *app) start(ctx context.Context) error {
	if a.cfg.HTTP.Addr != "" {
		if err := a.listen(); err != nil {
			return err
		}
	}
	a.intake.Store(true)
	logCtx, stopLogs := context.WithCancel(context.WithoutCancel(ctx))
	a.stopLogs = stopLogs
	for _, l := range a.rateLogs {
		a.logsGroup.Add(1)
		go func() {
			defer a.logsGroup.Done()
			l.Run(logCtx)
		}()
	}
	if a.core.tools != nil {
		// Approvals whose time ran out resume their runs as denied, from whichever process
		// takes them first.
		a.logsGroup.Go(func() { a.core.team.ExpireApprovals(logCtx, approvalSweep, a.core.enqueueExpiry) })
	}
	for _, ch := range a.chans {
		if err := ch.Start(ctx, a); err != nil {
			return explainStart(ch.Name(), err)
		}
		if reg, ok := ch.(channels.CommandRegistrar); ok {
			if err := reg.RegisterCommands(ctx, channels.Commands()); err != nil {
				a.log.Warn("registering commands failed", "channel", ch.Name(), "err", err)
			}
		}
		a.log.Info("channel started", "channel", ch.Name())
	}
	return a.pool.Start(ctx)
}

// listen serves health, metrics and the webhooks on cfg.HTTP.Addr, within the listener's
// limits (internal/listen): what anyone can hold there is bounded, and webhook traffic cannot
// starve the health endpoints.
func (a *app) listen() error {
	ln, err := net.Listen("tcp", a.cfg.HTTP.Addr)
	if err != nil {
		return explainListen(a.cfg.HTTP.Addr, err)
	}
	l, err := listen.New(ln, listen.Options{}, a.log, a.metrics.reg)
	if err != nil {
		_ = ln.Close()
		return err
	}
	mux := http.NewServeMux()
	// /healthz waits on nothing: it is in no budget, so nothing but the connection limit
	// stands between a probe and its answer.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("GET /readyz", l.Health("/readyz", http.HandlerFunc(a.readyz)))
	mux.Handle("GET /metrics", l.Health("/metrics", promhttp.HandlerFor(a.metrics.reg, promhttp.HandlerOpts{})))
	for path, h := range a.webhooks {
		if _, p, ok := strings.Cut(path, " "); ok { // "GET /path": a page browsers follow
			mux.Handle(path, l.Page(p, h))
			continue
		}
		mux.Handle("POST "+path, l.Webhook(path, h))
	}
	a.listener = l
	a.server = l.Server(mux)
	go func() {
		if err := a.server.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("http listener stopped", "err", err)
		}
	}()
	a.log.Info("http listening", "addr", ln.Addr().String())
	return nil
}

// readinessPings are /readyz's PINGs of Redis: one per client in flight at a time, off the
// request, which answers at its own deadline whatever the PING does (see redisping).
var readinessPings = &redisping.Flights{}

// readyz: Redis answers, and every channel's own inbound loop says it is receiving (a process
// standing by for an intake lease is ready: it works the queue and sends). The body says, per
// leased intake, whether this process holds it.
func (a *app) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var problems []string
	if !a.intake.Load() {
		problems = append(problems, "shutting down")
	}
	// Not Ping(ctx) here: go-redis does not end a PING on a stalled connection at ctx's
	// deadline; readinessPings answers by it whatever the PING does.
	if err := readinessPings.Ping(ctx, a.core.redis); err != nil {
		problems = append(problems, "redis: unreachable")
	}
	for _, ch := range a.chans {
		if rd, ok := ch.(channels.Readiness); ok {
			if err := rd.Ready(); err != nil {
				problems = append(problems, ch.Name()+": "+err.Error())
			}
		}
	}
	var roles []string
	for _, p := range slices.Sorted(maps.Keys(a.leading)) {
		switch n := a.leading[p].Load(); {
		case n > 0 && p == "telegram":
			roles = append(roles, p+": this process takes the updates in (holds the intake lease)")
		case n > 0:
			roles = append(roles, fmt.Sprintf("%s: this process takes the updates in (holds %d intake lease(s))", p, n))
		default:
			roles = append(roles, p+": standing by (another process holds the intake lease)")
		}
	}
	if len(problems) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(strings.Join(append(problems, roles...), "\n") + "\n"))
		return
	}
	_, _ = w.Write([]byte(strings.Join(append([]string{"ready"}, roles...), "\n") + "\n"))
}

// shutdown stops intake (a channel that can stop taking events in while it still sends does so
// first, releasing an intake lease to a standby process at once), stops the workers, stops the
// channels, then closes delivery, HTTP and the core. With a shared Redis the workers hand their
// unfinished runs back at once, so the other processes take them over within a round trip
// instead of after ctx's deadline; with the embedded store, which no other process shares, runs
// in flight finish until the deadline (the store ends with the process). A hand-back is not an
// error.
func (a *app) shutdown(ctx context.Context) error {
	a.intake.Store(false)
	var errs []error
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, ch := range a.chans {
		if is, ok := ch.(channels.IntakeStopper); ok {
			if err := is.StopIntake(stopCtx); err != nil {
				errs = append(errs, fmt.Errorf("stopping %s's intake: %w", ch.Name(), err))
			}
		}
	}
	if a.pool != nil {
		stop := a.pool.Shutdown
		if a.cfg.SharedStore() {
			stop = a.pool.HandBack
		}
		if err := stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping workers: %w", err))
		}
	}
	if a.router != nil {
		// The router's replies still being sent go out while the channels can still send.
		if err := a.router.Close(stopCtx); err != nil {
			errs = append(errs, fmt.Errorf("router: %w", err))
		}
	}
	for _, ch := range a.chans {
		if err := ch.Stop(stopCtx); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", ch.Name(), err))
		}
	}
	if a.chores != nil {
		if err := a.chores.Close(stopCtx); err != nil {
			errs = append(errs, err)
		}
	}
	if a.stopLogs != nil {
		a.stopLogs()
		a.logsGroup.Wait()
	}
	if a.delivery != nil {
		a.delivery.Close()
	}
	if a.server != nil {
		if err := a.server.Shutdown(stopCtx); err != nil {
			errs = append(errs, fmt.Errorf("http: %w", err))
		}
	}
	a.closeCore()
	return errors.Join(errs...)
}

func (a *app) closeCore() {
	if a.core != nil {
		if err := a.core.Close(); err != nil {
			a.log.Warn("closing the store", "err", err)
		}
		a.core = nil
	}
}

// routerMetrics feeds the channels layer's counters into Prometheus.
type routerMetrics struct{ m *metrics }

func (r routerMetrics) Inbound(p string)         { r.m.inbound.WithLabelValues(p).Inc() }
func (r routerMetrics) DedupeHit(p string)       { r.m.dedupeHits.WithLabelValues(p).Inc() }
func (r routerMetrics) Refused(p, reason string) { r.m.refused.WithLabelValues(p, reason).Inc() }
func (r routerMetrics) Command(p, c string)      { r.m.commands.WithLabelValues(p, c).Inc() }
func (r routerMetrics) OutboundError(p, k string) {
	r.m.outboundErr.WithLabelValues(p, k).Inc()
}
