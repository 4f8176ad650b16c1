package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/lead"
	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/core/profile"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/core/tools"
)

// core is the platform-neutral part of a process: the store, the queue, the thread state and
// the agent team. Close releases it in reverse order.
type core struct {
	log      *slog.Logger
	redis    redis.UniversalClient
	embedded bool
	provider llm.Provider
	demo     bool
	signer   *runs.Signer
	// signingKey is the newest run-signing key; interactive ids are signed with a key derived
	// from it.
	signingKey []byte
	queue      *runs.Queue
	threads    *threads.Store
	team       *lead.Team
	// tools are the MCP servers' tools; nil when none is configured.
	tools *tools.Manager
	// profiles pick each run's profile; nil when none is configured.
	profiles *profile.Set
	closers  []func() error
}

func (c *core) Close() error {
	var errs []error
	for i := len(c.closers) - 1; i >= 0; i-- {
		errs = append(errs, c.closers[i]())
	}
	c.closers = nil
	return errors.Join(errs...)
}

// newProvider picks the model provider the configuration names, with the named endpoints of
// llm.providers beside it (a profile's provider) when there are any.
func newProvider(cfg *config.Config, log *slog.Logger) (p llm.Provider, demo bool, err error) {
	switch cfg.LLM.Provider {
	case config.ProviderDemo, "":
		p, demo = llm.NewDemo(), true
	case config.ProviderOpenAI:
		top, _ := cfg.LLM.Endpoint("")
		if p, err = openAI(top, log); err != nil {
			return nil, false, err
		}
	default:
		return nil, false, fmt.Errorf("unknown llm.provider %q", cfg.LLM.Provider)
	}
	if len(cfg.LLM.Providers) == 0 {
		return p, demo, nil
	}
	named := make(map[string]llm.Provider, len(cfg.LLM.Providers))
	for name, e := range cfg.LLM.Providers {
		if named[name], err = openAI(e, log); err != nil {
			return nil, false, fmt.Errorf("llm.providers.%s: %w", name, err)
		}
	}
	return llm.NewProviders(p, named), demo, nil
}

// openAI is the client of one OpenAI-compatible endpoint.
func openAI(e config.LLMProvider, log *slog.Logger) (llm.Provider, error) {
	return llm.NewOpenAI(llm.OpenAIOptions{BaseURL: e.BaseURL, APIKey: e.APIKey, Model: e.Model,
		Timeout: e.Timeout, MaxRetries: e.MaxRetries, Logger: log})
}

// newTranscriber is the client of llm.transcription's endpoint; nil when it is off (no model,
// or the top-level endpoint is the offline demo).
func newTranscriber(cfg *config.Config) (*llm.Transcriber, error) {
	tc := cfg.LLM.Transcription
	if tc.Model == "" || (tc.Provider == "" && cfg.LLM.Provider != config.ProviderOpenAI) {
		return nil, nil
	}
	e, ok := cfg.LLM.Endpoint(tc.Provider)
	if !ok {
		return nil, fmt.Errorf("llm.transcription.provider %q is not in llm.providers", tc.Provider)
	}
	return llm.NewTranscriber(llm.TranscriberOptions{BaseURL: e.BaseURL, APIKey: e.APIKey, Model: tc.Model, Timeout: e.Timeout})
}

// newCore opens the store and builds the queue and the team. wrap, when set, wraps the model
// provider (metrics).
// On failure everything it opened is closed again.
func newCore(ctx context.Context, cfg *config.Config, log *slog.Logger, hooks coreHooks) (*core, error) {
	c := &core{log: log}
	if err := c.open(ctx, cfg, hooks); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// open is newCore's work; on error the caller closes what it opened.
// coreHooks are what the app adds to the core for its metrics: wrap, when set, wraps the model
// provider; onRecovery, when set, is told of the queue's recoveries.
type coreHooks struct {
	wrap        func(llm.Provider) llm.Provider
	onRecovery  func(runs.Recovery, int)
	toolMetrics tools.Metrics
	// fetch downloads a file users sent, through the channel of its platform (see
	// lead.FileOptions); nil: files are named to the model, not read.
	fetch func(ctx context.Context, k conv.Key, a conv.Attachment, limit int64) ([]byte, error)
}

func (c *core) open(ctx context.Context, cfg *config.Config, hooks coreHooks) (err error) {
	wrap := hooks.wrap
	log := c.log
	routeRedisLogs(log)
	client, closeRedis, embedded, err := runs.OpenRedis(ctx, runs.RedisOptions{
		URL: cfg.Redis.URL, Mode: runs.RedisMode(cfg.Redis.Mode), Addrs: cfg.Redis.Addrs,
		MasterName: cfg.Redis.MasterName, Password: cfg.Redis.Password, ConnectTimeout: cfg.Redis.ConnectTimeout,
		Logger: log,
	})
	if errors.Is(err, runs.ErrRedisUnreachable) {
		return hint(err, "check redis.url (or redis.addrs) and that Redis is running and reachable from here")
	}
	if err != nil {
		return err
	}
	c.redis, c.embedded = client, embedded
	c.closers = append(c.closers, closeRedis)

	if err := c.openSigner(cfg, embedded); err != nil {
		return err
	}

	if c.provider, c.demo, err = newProvider(cfg, log); err != nil {
		return err
	}
	if wrap != nil {
		c.provider = wrap(c.provider)
	}
	if c.demo {
		log.Warn("model: the offline demo provider — not an AI; set DEEPSEEK_API_KEY or BOT_LLM__BASE_URL for a real model")
	} else {
		log.Info("model: OpenAI-compatible provider", "base_url", cfg.LLM.BaseURL, "model", cfg.LLM.Model)
	}

	c.threads = threads.New(client, threads.Options{
		Prefix:           cfg.Redis.Prefix,
		HistoryTurns:     keptTurns(cfg),
		ClarificationTTL: cfg.Runs.ClarificationTTL,
		OutcomeTTL:       recordTTL(cfg.Runs.MaxAttempts),
	})
	c.queue, err = runs.Open(ctx, client, runs.Options{
		Prefix:             cfg.Redis.Prefix,
		Workers:            cfg.Runs.Workers,
		Lease:              cfg.Runs.Lease,
		MaxAttempts:        cfg.Runs.MaxAttempts,
		OutageRetryBase:    cfg.Runs.OutageRetryBase,
		Followup:           runs.Followup(cfg.Runs.Followup),
		MaxPerConversation: cfg.Runs.MaxPerConversation,
		MaxPending:         int64(cfg.Runs.MaxPending),
		Signer:             c.signer,
		Logger:             log,
		OnRecovery:         hooks.onRecovery,
	})
	if err != nil {
		return err
	}
	if err := c.openTeam(ctx, cfg, hooks); err != nil {
		return err
	}
	return nil
}

// openSigner makes the run signer from auth.signing_keys, or — with the embedded store, which
// no other process shares — from a key generated for this process.
func (c *core) openSigner(cfg *config.Config, embedded bool) error {
	log := c.log
	keys := make([][]byte, 0, len(cfg.Auth.SigningKeys))
	for _, k := range cfg.Auth.SigningKeys {
		keys = append(keys, []byte(k))
	}
	if len(keys) == 0 {
		if !embedded {
			return errors.New("auth.signing_keys is required with a shared Redis: every process must verify the others' runs")
		}
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		keys = append(keys, k)
		log.Info("signing runs with a key generated for this process (embedded store)")
	}
	c.signingKey = keys[0]
	var err error
	c.signer, err = runs.NewSigner(keys)
	return err
}

// openTeam starts the tool servers, if any, and builds the lead team on the provider.
func (c *core) openTeam(ctx context.Context, cfg *config.Config, hooks coreHooks) error {
	log := c.log
	var toolSet lead.ToolSet
	if len(cfg.Tools.Servers) > 0 {
		// Servers connect in the background: one that is down holds nothing back, and its tools
		// are offered once it is up.
		c.tools = tools.New(toolsConfig(cfg.Tools), tools.Options{Logger: log, Metrics: hooks.toolMetrics, Version: versionString()})
		c.tools.Start(ctx)
		c.closers = append(c.closers, func() error { c.tools.Close(); return nil })
		toolSet = c.tools
		log.Info("tools: connecting the tool servers", "servers", len(cfg.Tools.Servers))
	}
	files, err := c.fileOptions(cfg, hooks)
	if err != nil {
		return err
	}
	opts := lead.Options{
		Tools:            toolSet,
		System:           cfg.LLM.SystemPrompt,
		Model:            cfg.LLM.Model,
		MaxDepth:         cfg.Subagents.MaxDepth,
		NoSubagents:      cfg.Subagents.MaxDepth == 0,
		MaxConcurrent:    cfg.Subagents.MaxConcurrent,
		NudgeRetries:     cfg.Subagents.StructuredNudgeRetries,
		ClarificationTTL: cfg.Runs.ClarificationTTL,
		Files:            files,
		Logger:           log,
	}
	if len(cfg.Profiles) > 0 || len(cfg.Routes) > 0 {
		if opts.Profiles, err = profileSet(cfg); err != nil {
			return err
		}
		// The delegate tool is there when any profile has subagents; a run whose profile has
		// none is not offered it.
		opts.NoSubagents = true
		for _, name := range opts.Profiles.Names() {
			if p, _ := opts.Profiles.Profile(name); p.Subagents.MaxDepth > 0 {
				opts.NoSubagents = false
			}
		}
	}
	c.profiles = opts.Profiles
	c.team, err = lead.NewTeam(c.provider, c.threads, opts)
	if err != nil {
		return err
	}
	c.closers = append(c.closers, func() error { c.team.Close(); return nil })
	return nil
}

// keptTurns is how many turns a thread keeps: the most any profile sends the model (each
// profile's run reads its own number of them).
func keptTurns(cfg *config.Config) int {
	n := cfg.Runs.HistoryTurns
	for _, p := range cfg.Profiles {
		n = max(n, p.HistoryTurns)
	}
	return n
}

// fileOptions are the bounds of what is read of the files users send, and how it is read
// (attachments.*): with attachments.download off there is no Fetch, and files are named to the
// model without being downloaded.
func (c *core) fileOptions(cfg *config.Config, hooks coreHooks) (lead.FileOptions, error) {
	a := cfg.Attachments
	f := lead.FileOptions{MaxBytes: int64(a.MaxBytes), MaxTextChars: a.MaxTextChars, MaxFiles: a.MaxFiles}
	if a.Download {
		f.Fetch = hooks.fetch
	}
	tr, err := newTranscriber(cfg)
	if err != nil {
		return f, err
	}
	if tr != nil {
		f.Transcriber = tr
	}
	return f, nil
}

// recordTTL is how long a run's records (its outcome and result, the messages it sent) are
// kept: they must outlast every attempt of the run, so that a later one edits or skips instead
// of posting again. A day covers the default five tries many times over (a few minutes of
// outage waits); with more tries allowed it is an hour for each, the longest wait between two
// (30 minutes) and an attempt.
func recordTTL(maxAttempts int) time.Duration {
	return max(threads.DefaultOutcomeTTL, time.Duration(maxAttempts)*time.Hour)
}
