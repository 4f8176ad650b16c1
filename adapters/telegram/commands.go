package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// commands keeps the bot's command menu (RegisterCommands), retrying a registration refused
// for now in the background while the intake lives.
type commands struct {
	api     *botAPI
	workers *kit.Workers
	// reg retries a registration refused at start (tests set its Wait to record the waits
	// instead of sleeping them).
	reg *kit.LaterRetry
}

// Bounds on retrying a command registration in the background: the first retry waits
// regRetryMin (or a 429's retry_after, when longer), each later one twice the one before, up
// to regRetryMax. A retry is one getMyCommands and at most one setMyCommands.
const (
	regRetryMin = 2 * time.Second
	regRetryMax = 5 * time.Minute
)

// RegisterCommands sets the bot's command menu to cmds (admin-only commands are left out of the
// menu everyone sees), calling setMyCommands only when the list differs from getMyCommands.
// Names are lowercased and lose a leading '/'.
//
// A registration refused for now — rate limited past the call's own waits, a 5xx, a network
// error — is retried in the background (kit.LaterRetry) until it succeeds or the channel
// stops: RegisterCommands then logs a warning and returns nil. It returns an error when
// retrying cannot help: the channel is not started or has stopped, ctx ended, Telegram refused
// the token or the list itself (another 4xx), or its answer was unreadable. A later call
// replaces a retry still pending.
func (cm *commands) RegisterCommands(ctx context.Context, cmds []channels.CommandSpec) error {
	want := menuCommands(cmds)
	return cm.reg.Try(ctx, cm.workers, registrationRetryable, func(ctx context.Context) error { return cm.register(ctx, want) })
}

// menuCommands is the menu everyone sees for cmds.
func menuCommands(cmds []channels.CommandSpec) []tgbotapi.BotCommand {
	want := make([]tgbotapi.BotCommand, 0, len(cmds))
	for _, s := range cmds {
		if s.AdminOnly {
			continue
		}
		desc := s.Description
		if desc == "" {
			desc = s.Name
		}
		want = append(want, tgbotapi.BotCommand{Command: strings.ToLower(strings.TrimPrefix(s.Name, "/")), Description: desc})
	}
	return want
}

// errUnreadableCommands: getMyCommands answered with something that is not a command list.
var errUnreadableCommands = errors.New("telegram: getMyCommands: unreadable result")

// register is one registration: getMyCommands, then setMyCommands when they differ.
func (cm *commands) register(ctx context.Context, want []tgbotapi.BotCommand) error {
	raw, err := cm.api.callWaiting(ctx, "getMyCommands", nil, true)
	if err != nil {
		return err
	}
	var have []tgbotapi.BotCommand
	if err := json.Unmarshal(raw, &have); err != nil {
		return fmt.Errorf("%w: %w", errUnreadableCommands, err)
	}
	if equalCommands(have, want) {
		return nil
	}
	b, err := json.Marshal(want)
	if err != nil {
		return fmt.Errorf("telegram: setMyCommands: %w", err)
	}
	_, err = cm.api.callWaiting(ctx, "setMyCommands", tgbotapi.Params{"commands": string(b)}, true)
	return err
}

// registrationRetryable tells a registration refused for now (a rate limit past the call's own
// waits, a 5xx, a network error) from one retrying cannot help.
func registrationRetryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, channels.ErrUnauthorized) || errors.Is(err, errUnreadableCommands) {
		return false
	}
	if _, limited := errors.AsType[*channels.RateLimitError](err); limited {
		return true
	}
	if ae, ok := errors.AsType[*APIError](err); ok {
		return ae.Code >= 500
	}
	return true
}

func equalCommands(a, b []tgbotapi.BotCommand) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
