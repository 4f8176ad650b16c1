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

	eof := make(chan struct{})
	con := console.New(console.Options{In: stdin, Out: stdout, OnEOF: func() { close(eof) }})
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
	select {
	case <-ctx.Done(): // interrupted
	case <-eof:
		// The input ended (Ctrl-D, or the end of piped text): every line is queued by now, so
		// answer them all before quitting.
		waitAnswered(ctx, a, chatIdleDeadline)
	}
	return drain(a, log, 30*time.Second)
}

// chatIdleDeadline bounds how long `bot chat` waits, once its input ends, for the runs of the
// lines typed before.
const chatIdleDeadline = 5 * time.Minute

// waitAnswered waits until the console conversation has no run queued or running (one waiting
// for a clarification counts as done: no more input can answer it), ctx ends, or the deadline.
func waitAnswered(ctx context.Context, a *app, deadline time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		d, err := a.core.queue.ConvDepth(ctx, console.Conv)
		if err == nil && d.Queued == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
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
