package main

import (
	"context"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/config"
)

// drainDeadline bounds how long SIGTERM waits for in-flight runs on the embedded store (with a
// shared Redis they are handed back to other processes at once).
const drainDeadline = 30 * time.Second

// storeName says where state lives, for the startup line: never the URL itself (it may hold a
// password).
func storeName(cfg *config.Config) string {
	if !cfg.SharedStore() {
		return "embedded (this process only)"
	}
	addrs := cfg.Redis.Addrs
	if cfg.Redis.URL != "" {
		if u, err := url.Parse(cfg.Redis.URL); err == nil {
			addrs = []string{u.Host}
		}
	}
	return "redis " + cfg.Redis.Mode + " " + strings.Join(addrs, ",")
}

// serve is `bot run`: every configured channel, the workers and the HTTP listener, until SIGTERM
// or SIGINT, then an ordered drain.
func serve(ctx context.Context, cfg *config.Config, stderr io.Writer) error {
	log := newLogger(cfg, stderr)
	log.Info("switchboard starting", "version", versionString(), "platforms", strings.Join(cfg.Enabled(), ","),
		"store", storeName(cfg), "http", cfg.HTTP.Addr)
	a, err := newApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	if err := a.start(ctx); err != nil {
		_ = a.shutdown(context.Background())
		return err
	}
	model := cfg.LLM.Model + " at " + cfg.LLM.BaseURL
	if a.core.demo {
		model = "demo (offline, not an AI)"
	}
	log.Info("switchboard started", "platforms", strings.Join(cfg.Enabled(), ","), "model", model, "workers", cfg.Runs.Workers)
	<-ctx.Done()
	if cfg.SharedStore() {
		log.Info("shutting down: intake stopped, handing unfinished runs back to other processes")
	} else {
		log.Info("shutting down: intake stopped, draining workers", "deadline", drainDeadline)
	}
	return drain(a, log, drainDeadline)
}
