package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/switchboard-bot/switchboard/adapters/console"
	"github.com/switchboard-bot/switchboard/config"
)

// chat is `bot chat`: the whole production path — router, signed envelope, queue, worker, lead
// chain, delivery — with the terminal as the only channel. With no Redis configured the store is
// embedded in the process; with no model key the demo model answers (and says so).
func chat(ctx context.Context, cfg *config.Config, stdin io.Reader, stdout, stderr io.Writer) error {
	if cfg.Log.Level == "" || cfg.Log.Level == "info" {
		cfg.Log.Level = "warn" // the terminal is for the conversation; operators use `bot run`
	}
	cfg.HTTP.Addr = "" // no listener for a terminal session
	log := newLogger(cfg, stderr)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	con := console.New(console.Options{In: stdin, Out: stdout, OnEOF: cancel})
	a, err := newApp(ctx, cfg, log, con)
	if err != nil {
		return err
	}
	if a.core.demo {
		fmt.Fprintln(stdout, "Switchboard chat — running the offline demo model (not an AI). Set DEEPSEEK_API_KEY for a real one.")
	} else {
		fmt.Fprintf(stdout, "Switchboard chat — model %s at %s\n", cfg.LLM.Model, cfg.LLM.BaseURL)
	}
	fmt.Fprintln(stdout, "Type a message and press Enter. /help lists commands; Ctrl-D quits.")
	if err := a.start(ctx); err != nil {
		_ = a.shutdown(context.Background())
		return err
	}
	<-ctx.Done()
	return drain(a, log, 30*time.Second)
}

// drain shuts the app down with a deadline for in-flight runs.
func drain(a *app, log *slog.Logger, deadline time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := a.shutdown(ctx); err != nil {
		log.Warn("shutdown", "err", err)
		return err
	}
	return nil
}
