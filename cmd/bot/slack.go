package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	slackadapter "github.com/switchboard-bot/switchboard/adapters/slack"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/intake"
	"github.com/switchboard-bot/switchboard/render"
)

// newSlack builds the Slack channel from slack.* and, in HTTP mode, mounts its three handlers
// (events, interactivity, slash command) on the shared listener.
func (a *app) newSlack(key render.Key) (*slackadapter.Channel, error) {
	s := a.cfg.Slack
	var installs slackadapter.Installations
	if s.ClientID != "" {
		store, err := newSlackInstallations(a.core.redis, a.cfg.Redis.Prefix, a.core.signingKey)
		if err != nil {
			return nil, fmt.Errorf("slack: installation store: %w", err)
		}
		installs = store
	}
	scfg := slackadapter.Config{
		Installations:      installs,
		ClientID:           s.ClientID,
		ClientSecret:       s.ClientSecret,
		RedirectURL:        s.RedirectURL,
		StateKey:           derive(a.core.signingKey, "switchboard slack oauth state v1"),
		BotToken:           s.BotToken,
		AppToken:           s.AppToken,
		SigningSecret:      s.SigningSecret,
		APIURL:             s.APIURL,
		Mode:               slackadapter.Mode(s.Mode),
		Connections:        s.Connections,
		ThreadReplies:      slackadapter.ThreadReplies(s.ThreadReplies),
		ReplyInThread:      s.ReplyInThread,
		ReplyInThreadSet:   true,
		Command:            s.Command,
		AssistantStatusOff: !s.AssistantStatus,
		StatusAfter:        kit.DefaultTypingAfter,
		StreamingOff:       !s.Streaming,
		SuggestedPrompts:   s.SuggestedPrompts,
		AgentView:          s.AgentView,
		Pacing:             s.Pacing,
		ReadyWindow:        s.ReadyWindow,
		ActionKey:          key,
		Logger:             a.log.With("channel", "slack"),
		// A payload the adapter skipped as malformed is an inbound event that became no run.
		OnMalformed: func() { a.metrics.refused.WithLabelValues("slack", "malformed").Inc() },
		Metrics:     newSlackMetrics(a.metrics.reg),
		RateLimits:  a.rateLimitLog("slack"),
		// The adapter has deleted the tokens and drops the workspace's events from now on; what
		// the workspace left queued or pending is dropped here, off the receiving goroutine.
		OnUninstall: func(id string) {
			a.chores.Go(context.Background(), "slack-uninstall:"+id, func(ctx context.Context) { a.dropSlackWorkspace(ctx, id) })
		},
	}
	if s.Mode != config.SlackHTTP {
		// Slack allows an app a few sockets and spreads its events over all of them: the
		// processes sharing this Redis hold slack.connections slots between them, one lease each.
		scfg.Lease = intake.NewLease(a.core.redis, a.cfg.Redis.Prefix)
		scfg.LeaseName = "slack:" + slackAppID(s.AppToken)
		scfg.LeaseOwner = a.core.queue.Options().Consumer
		onLease, onTakeover := a.onLease("slack"), a.onTakeover("slack")
		scfg.OnLease = func(_ int, held bool) { onLease(held) }
		scfg.OnTakeover = func(int) { onTakeover() }
	}
	ch, err := slackadapter.New(scfg)
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	if s.Mode == config.SlackHTTP {
		a.webhooks[s.EventsPath] = ch.EventsHandler()
		a.webhooks[s.InteractionsPath] = ch.InteractionsHandler()
		a.webhooks[s.CommandsPath] = ch.CommandsHandler()
	}
	if s.ClientID != "" {
		// Browsers follow these: GET routes (webhooks are POST unless their key names a method).
		a.webhooks["GET "+s.InstallPath] = ch.InstallHandler()
		a.webhooks["GET "+s.OAuthPath] = ch.OAuthHandler()
	}
	return ch, nil
}

// dropSlackWorkspace drops the pending work of a Slack workspace, or of every workspace of an
// Enterprise Grid organization, that uninstalled the app (id is the team or enterprise id): the
// runs of its conversations are cancelled (queued ones removed, an active one stopped), then
// their threads are forgotten (session logs deleted, pending clarifications withdrawn). Both
// are scans of the keyspace, fine for an event this rare. The adapter already refuses the
// workspace's sends, in this process at once and in the others within seconds, so a run that
// slips past (a redelivered event another process took before it noticed) posts nothing.
func (a *app) dropSlackWorkspace(ctx context.Context, id string) {
	ofID := func(k conv.Key) bool {
		if k.Platform != "slack" || id == "" {
			return false
		}
		for _, part := range strings.Split(k.Workspace, "/") { // "team" or "enterprise/team"
			if part == id {
				return true
			}
		}
		return false
	}
	log := a.log.With("channel", "slack", "workspace", id)
	cancelled, err := a.core.queue.CancelWhere(ctx, ofID)
	if err != nil {
		log.Error("slack: cancelling an uninstalled workspace's runs failed; its runs fail when they send", "err", err)
	}
	var runs int
	for _, c := range cancelled {
		runs += len(c.Removed)
		if c.Active != "" {
			runs++
		}
	}
	forgotten, err := a.core.threads.Conversations().ForgetWhere(ctx, func(s string) bool {
		k, ok := conv.ParseKey(s)
		return ok && ofID(k)
	})
	if err != nil {
		log.Error("slack: forgetting an uninstalled workspace's threads failed", "err", err)
	}
	log.Info("slack: dropped an uninstalled workspace's pending work", "runs_cancelled", runs, "threads_forgotten", len(forgotten))
}

// slackMetrics are the Slack adapter's own metrics, on the process's registry.
type slackMetrics struct {
	connections *prometheus.GaugeVec
	reconnects  prometheus.Counter
	acks        *prometheus.CounterVec
	limited     *prometheus.CounterVec
}

func newSlackMetrics(reg *prometheus.Registry) *slackMetrics {
	m := &slackMetrics{
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchboard_slack_socket_connected", Help: "1 while a Slack Socket Mode connection is up (its hello arrived), by connection.",
		}, []string{"connection"}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_slack_socket_reconnects_total", Help: "Slack Socket Mode reconnections.",
		}),
		acks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_slack_acks_total", Help: "Slack envelopes and HTTP deliveries by outcome: acked, refused (left for Slack to redeliver), failed (the ack could not be sent).",
		}, []string{"result"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_slack_rate_limited_total", Help: "Slack Web API answers asking to slow down (429, ratelimited), by method.",
		}, []string{"method"}),
	}
	reg.MustRegister(m.connections, m.reconnects, m.acks, m.limited)
	return m
}

func (m *slackMetrics) Connection(id int, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	m.connections.WithLabelValues(strconv.Itoa(id)).Set(v)
}
func (m *slackMetrics) Reconnect()                { m.reconnects.Inc() }
func (m *slackMetrics) Ack(result string)         { m.acks.WithLabelValues(result).Inc() }
func (m *slackMetrics) RateLimited(method string) { m.limited.WithLabelValues(method).Inc() }

// slackAppID is the public part of an app-level token (xapp-1-<app id>-…), or, for a token of
// another shape, a hash of it — never the secret itself.
func slackAppID(token string) string {
	parts := strings.Split(token, "-")
	if len(parts) >= 4 && parts[0] == "xapp" && strings.HasPrefix(parts[2], "A") && len(parts[2]) <= 32 {
		return parts[2]
	}
	sum := sha256.Sum256([]byte(token))
	return "h" + hex.EncodeToString(sum[:8])
}
