package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// metrics are the process's Prometheus metrics, served on /metrics.
type metrics struct {
	reg         *prometheus.Registry
	inbound     *prometheus.CounterVec
	dedupeHits  *prometheus.CounterVec
	refused     *prometheus.CounterVec
	commands    *prometheus.CounterVec
	runs        *prometheus.CounterVec
	runDuration *prometheus.HistogramVec
	tokens      *prometheus.CounterVec
	outboundErr *prometheus.CounterVec
	// intakeLeader is 1 on the process that holds a platform's intake lease (the Telegram
	// poller), 0 on the others.
	intakeLeader *prometheus.GaugeVec
	// intakeLeases is how many intake leases of a platform this process holds (Telegram's one,
	// Discord's shards, Slack's socket slots); leaseTakeovers counts the leases it took after
	// another process had held them (a dead process's, or one handed over).
	intakeLeases   *prometheus.GaugeVec
	leaseTakeovers *prometheus.CounterVec
	// recoveries counts the queue's recoveries: hints taken over from a silent worker, runs
	// rescued (queued, never scheduled), runs retried after a transient failure.
	recoveries *prometheus.CounterVec
	// modelCalls counts model calls by result; modelSeconds times them whole and
	// modelFirstToken until their first streamed piece.
	modelCalls      *prometheus.CounterVec
	modelSeconds    *prometheus.HistogramVec
	modelFirstToken prometheus.Histogram
	// rateLimited counts the platforms' rate limits by what the adapter did (retried after the
	// wait, or gave_up and returned it); rateLimitWait sums the waits retried after.
	rateLimited   *prometheus.CounterVec
	rateLimitWait *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		inbound: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_inbound_events_total", Help: "Inbound platform events received, by platform.",
		}, []string{"platform"}),
		dedupeHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_dedupe_hits_total", Help: "Inbound events dropped as duplicates, by platform.",
		}, []string{"platform"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_inbound_refused_total", Help: "Inbound events not turned into runs, by platform and reason.",
		}, []string{"platform", "reason"}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_commands_total", Help: "Commands handled, by platform and command.",
		}, []string{"platform", "command"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_runs_total", Help: "Runs finished by this process, by outcome (answered, waiting, cancelled, failed, error).",
		}, []string{"outcome"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "switchboard_run_duration_seconds", Help: "Time a worker spent on a run, by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12),
		}, []string{"outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_model_tokens_total", Help: "Model tokens used, by kind (prompt, completion).",
		}, []string{"kind"}),
		outboundErr: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_outbound_errors_total", Help: "Failed outbound platform operations, by platform and kind.",
		}, []string{"platform", "kind"}),
		intakeLeader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchboard_intake_leader", Help: "1 while this process holds an intake lease of the platform (Telegram: it polls; Discord: a shard; Slack: a socket slot), 0 while other processes hold them all.",
		}, []string{"platform"}),
		intakeLeases: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchboard_intake_leases_held", Help: "Intake leases this process holds, by platform: Telegram's polling lease, Discord's shards, Slack's Socket Mode connection slots.",
		}, []string{"platform"}),
		leaseTakeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_intake_lease_takeovers_total", Help: "Intake leases this process took after another process held them (it died, or handed them over), by platform.",
		}, []string{"platform"}),
		recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_run_recoveries_total", Help: "Recoveries of this process's queue workers, by kind: takeover (a silent worker's conversations taken over), rescue (a run queued but never scheduled), retry (a run tried again after a transient failure).",
		}, []string{"kind"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_model_calls_total", Help: "Model calls by result: ok, rate_limited (429), unavailable (5xx, timeouts, cut streams), failed (refused: 4xx), cancelled.",
		}, []string{"result"}),
		modelSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "switchboard_model_call_seconds", Help: "Time a model call took, whole answer, by result.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}, []string{"result"}),
		modelFirstToken: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "switchboard_model_first_token_seconds", Help: "Time from a model call to its first streamed piece.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_platform_rate_limited_total", Help: "Platform API answers asking to slow down (429), by platform and what was done: retried (after the wait) or gave_up (the wait was too long; delivery waits).",
		}, []string{"platform", "result"}),
		rateLimitWait: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_platform_rate_limit_wait_seconds_total", Help: "Time waited out on platform rate limits before retrying, by platform.",
		}, []string{"platform"}),
	}
	m.reg.MustRegister(m.inbound, m.dedupeHits, m.refused, m.commands, m.runs, m.runDuration, m.tokens, m.outboundErr, m.intakeLeader,
		m.intakeLeases, m.leaseTakeovers, m.recoveries, m.modelCalls, m.modelSeconds, m.modelFirstToken, m.rateLimited, m.rateLimitWait)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watch adds the gauges read from the running core.
func (m *metrics) watch(c *core) {
	depth := &cachedDepth{q: c.queue}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "switchboard_queue_pending", Help: "Admitted runs not yet finished, over all processes.",
	}, func() float64 { return float64(depth.get().Pending) }))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "switchboard_dead_letters", Help: "Runs in the dead-letter stream.",
	}, func() float64 { return float64(depth.get().DeadLetters) }))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "switchboard_agents_active", Help: "Agents (leads and subagents) alive in this process.",
	}, func() float64 { return float64(len(c.team.Runtime().List())) }))
	const historyReads = "switchboard_history_reads_total"
	const historyHelp = "Runs' reads of their conversation's history, by read: partial (only the turns since the history this process keeps) or whole (the whole log)."
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: historyReads, Help: historyHelp, ConstLabels: prometheus.Labels{"read": "partial"},
	}, func() float64 { return float64(c.team.HistoryStats().Partial) }))
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: historyReads, Help: historyHelp, ConstLabels: prometheus.Labels{"read": "whole"},
	}, func() float64 { return float64(c.team.HistoryStats().Whole) }))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "switchboard_history_cache_events", Help: "Events the history cache of this process holds room for (bounded at 16,384).",
	}, func() float64 { return float64(c.team.HistoryStats().Room) }))
}

// instrument wraps the run handler to count outcomes and time runs.
func (m *metrics) instrument(h runs.Handler) runs.Handler {
	return runs.HandlerFunc(func(ctx context.Context, run *runs.Run) (runs.Outcome, error) {
		start := time.Now()
		out, err := h.HandleRun(ctx, run)
		label := string(out)
		if err != nil {
			label = "error"
		}
		m.runs.WithLabelValues(label).Inc()
		m.runDuration.WithLabelValues(label).Observe(time.Since(start).Seconds())
		return out, err
	})
}

// countingProvider counts the tokens a provider reports.
type countingProvider struct {
	llm.Provider
	m *metrics
}

func (p countingProvider) Stream(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Response, error) {
	start := time.Now()
	var first sync.Once
	resp, err := p.Provider.Stream(ctx, req, func(d llm.Delta) {
		first.Do(func() { p.m.modelFirstToken.Observe(time.Since(start).Seconds()) })
		if onDelta != nil {
			onDelta(d)
		}
	})
	result := modelResult(ctx, err)
	p.m.modelCalls.WithLabelValues(result).Inc()
	p.m.modelSeconds.WithLabelValues(result).Observe(time.Since(start).Seconds())
	if err == nil {
		p.m.tokens.WithLabelValues("prompt").Add(float64(resp.Usage.PromptTokens))
		p.m.tokens.WithLabelValues("completion").Add(float64(resp.Usage.CompletionTokens))
	}
	return resp, err
}

// modelResult names a model call's outcome for the metrics.
func modelResult(ctx context.Context, err error) string {
	se, isStatus := errors.AsType[*llm.StatusError](err)
	switch {
	case err == nil:
		return "ok"
	case ctx.Err() != nil:
		return "cancelled"
	case isStatus && se.StatusCode == http.StatusTooManyRequests:
		return "rate_limited"
	case llm.Temporary(err):
		return "unavailable"
	default:
		return "failed"
	}
}

// rateLimitLog is platform's kit.RateLimitLog, counting into the metrics.
func (m *metrics) rateLimitLog(platform string, log *slog.Logger) *kit.RateLimitLog {
	l := kit.NewRateLimitLog(platform, log, nil)
	retried, gaveUp := m.rateLimited.WithLabelValues(platform, "retried"), m.rateLimited.WithLabelValues(platform, "gave_up")
	wait := m.rateLimitWait.WithLabelValues(platform)
	l.OnLimited = func(_ string, d time.Duration, again bool) {
		if again {
			retried.Inc()
			wait.Add(d.Seconds())
		} else {
			gaveUp.Inc()
		}
	}
	return l
}

// cachedDepth reads the queue depth at most every few seconds: it scans the keyspace.
type cachedDepth struct {
	q  *runs.Queue
	mu sync.Mutex
	at time.Time
	d  runs.Depth
}

func (c *cachedDepth) get() runs.Depth {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) < 5*time.Second {
		return c.d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if d, err := c.q.Depth(ctx); err == nil {
		c.d = d
	}
	c.at = time.Now()
	return c.d
}
