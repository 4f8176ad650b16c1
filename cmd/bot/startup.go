package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/channels"
)

// hinted is an error that ends with what the operator should check, said once, after the
// cause.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() + " — " + h.hint }
func (h *hinted) Unwrap() error { return h.err }

// hint adds what to check to err.
func hint(err error, what string) error { return &hinted{err: err, hint: what} }

// credentialKeys names, per platform, the configuration key of the credential a platform can
// refuse.
var credentialKeys = map[string]string{
	"telegram": "telegram.token (the token @BotFather gave the bot)",
	"slack":    "slack.bot_token and slack.app_token",
	"discord":  "discord.token (Developer Portal → your application → Bot → Reset Token)",
}

// explainStart adds what to check to a channel's start failure. Adapters name themselves in
// their errors ("telegram: getMe: …"), so nothing is prefixed here.
func explainStart(platform string, err error) error {
	if h, ok := discordIntentHint(err); ok {
		return hint(err, h)
	}
	if errors.Is(err, channels.ErrUnauthorized) {
		if key, ok := credentialKeys[platform]; ok {
			return hint(err, "check "+key)
		}
	}
	return hint(err, "check the "+platform+".* settings and that the platform can be reached from here")
}

// explainListen says why http.addr could not be listened on.
func explainListen(addr string, err error) error {
	err = fmt.Errorf("http.addr %s: %w", addr, err)
	if errors.Is(err, syscall.EADDRINUSE) {
		return hint(err, "another process listens there: stop it, or set http.addr (BOT_HTTP__ADDR) to a free port")
	}
	return hint(err, "check http.addr (host:port, like :8080)")
}

// redisLog is where go-redis's own log lines go: the logger of the newest core, at debug level
// (its connection errors repeat what our retry loops already log in our own format).
var (
	redisLog     atomic.Pointer[slog.Logger]
	redisLogOnce sync.Once
)

// routeRedisLogs sends go-redis's internal logger into log (process-wide: go-redis has one).
func routeRedisLogs(log *slog.Logger) {
	redisLog.Store(log)
	redisLogOnce.Do(func() { redis.SetLogger(redisLogger{}) })
}

type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if log := redisLog.Load(); log != nil {
		log.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
	}
}
