package main

import (
	"context"
	"io"
	"time"

	"github.com/switchboard-bot/switchboard/config"
)

// drainDeadline bounds how long SIGTERM waits for in-flight runs before releasing them to other
// workers.
const drainDeadline = 30 * time.Second

// serve is `bot run`: every configured channel, the workers and the HTTP listener, until SIGTERM
// or SIGINT, then an ordered drain.
func serve(ctx context.Context, cfg *config.Config, stderr io.Writer) error {
	log := newLogger(cfg, stderr)
	log.Info("starting switchboard", "version", versionString(), "config", cfg)
	a, err := newApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	if err := a.start(ctx); err != nil {
		_ = a.shutdown(context.Background())
		return err
	}
	<-ctx.Done()
	log.Info("shutting down: intake stopped, draining workers", "deadline", drainDeadline)
	return drain(a, log, drainDeadline)
}
