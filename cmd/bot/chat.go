package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/switchboard-bot/switchboard/adapters/console"
	"github.com/switchboard-bot/switchboard/channels/delivery"
	"github.com/switchboard-bot/switchboard/config"
)

// chat is `bot chat`: the whole production path — router, signed envelope, queue, worker, lead
// chain, delivery — with the terminal as the only channel. With no Redis configured the store is
// embedded in the process; with no model key the demo model answers (and says so).
//
// It runs until the input ends (every line typed is answered first), ctx ends (SIGTERM), or the
// person at the terminal quits with Ctrl-C, which arrives on interrupts: a Ctrl-C while the bot is
// working cancels that work — as /cancel does — and says that another one quits; a Ctrl-C while
// nothing runs, or one within chatQuitWindow of that cancel, quits at once.
func chat(ctx context.Context, cfg *config.Config, stdin io.Reader, stdout, stderr io.Writer, interrupts <-chan os.Signal) error {
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
	fmt.Fprintln(stdout, "Type a message and press Enter. /help lists commands; Ctrl-C stops a reply, Ctrl-D quits.")
	if err := a.start(ctx); err != nil {
		_ = a.shutdown(context.Background())
		return err
	}
	var cancelled time.Time // when a Ctrl-C last cancelled work
	for {
		select {
		case <-ctx.Done(): // SIGTERM
			return drain(a, log, 30*time.Second)
		case <-eof:
			// The input ended (Ctrl-D, or the end of piped text): every line is queued by now, so
			// answer them all before quitting.
			waitAnswered(ctx, a, chatIdleDeadline)
			return drain(a, log, 30*time.Second)
		case <-interrupts:
			if (!cancelled.IsZero() && time.Since(cancelled) < chatQuitWindow) || !working(ctx, a) {
				return quitChat(a, log)
			}
			// The same path as typing /cancel: the router cancels the running and queued runs,
			// withdraws an open question, and answers with what it did.
			con.Type(ctx, "/cancel")
			con.Notice("(Press Ctrl-C again to quit.)")
			cancelled = time.Now()
		}
	}
}

// chatQuitWindow is how soon after a Ctrl-C that cancelled work a second one quits `bot chat`
// even if there is work again.
const chatQuitWindow = 3 * time.Second

// working reports whether the person at the terminal is waiting on the bot: a run of the console
// conversation is queued, or running and its closing message not out yet (the worker records the
// run done just after). One waiting for an answer to its question is not working. A store that
// cannot tell counts as working, so a Ctrl-C tries to cancel first.
func working(ctx context.Context, a *app) bool {
	d, err := a.core.queue.ConvDepth(ctx, console.Conv)
	switch {
	case err != nil:
		return true
	case d.Queued == 0:
		return false
	case d.Queued > 1 || !d.Running || d.Active == "":
		return true
	}
	rec, err := a.core.threads.Records().Lookup(ctx, d.Active, []string{delivery.StepFinal}, nil)
	if err != nil {
		return true
	}
	_, closed := rec.Outbound[delivery.StepFinal]
	return !closed
}

// quitChat ends `bot chat` at the user's request: what is still queued or running is cancelled
// (nobody is left to read it), then the app shuts down.
func quitChat(a *app, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := a.core.queue.Cancel(ctx, console.Conv, ""); err != nil {
		log.Warn("chat: cancelling the runs left on quit", "err", err)
	}
	return drain(a, log, 10*time.Second)
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
