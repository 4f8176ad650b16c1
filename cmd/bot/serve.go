package main

import (
	"context"
	"errors"
	"io"

	"github.com/switchboard-bot/switchboard/config"
)

// serve is `bot run`.
func serve(ctx context.Context, cfg *config.Config, stderr io.Writer) error {
	_ = ctx
	_ = cfg
	_ = stderr
	return errors.New("bot run: the production pipeline is being wired (issue 6); use `bot chat` meanwhile")
}
