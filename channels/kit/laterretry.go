package kit

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// LaterRetry retries in the background a step that the platform refused for now — the command
// registration an adapter makes at start, while the platform is rate limiting, failing or out
// of reach — so that a bad minute at start does not leave the bot's commands missing until the
// next restart. The first retry waits Min (or a RateLimitError's RetryAfter, when longer), each
// later one twice the one before, up to Max, until the step succeeds, fails in a way retrying
// cannot help, or the retry is cancelled. One retry is pending at a time: Start ends the one
// before. Every failure is logged, and the success.
type LaterRetry struct {
	// Failed starts each failure's log line ("discord: registering commands failed"); Done is
	// the success's ("discord: commands registered after retrying"); GaveUp ends the line of a
	// failure retrying cannot help ("the slash commands stay as Discord has them until the
	// next start").
	Failed, Done, GaveUp string
	Min, Max             time.Duration
	// Wait waits between attempts: Sleep when nil (tests record the waits instead).
	Wait func(ctx context.Context, d time.Duration) error
	Log  *slog.Logger
	// Attrs are logged with every line (Discord's guild).
	Attrs []any

	mu     sync.Mutex
	cancel context.CancelFunc
}

// RetryWait is how long a retry waits after err, given its backoff: a rate limit's RetryAfter
// when that is longer.
func RetryWait(backoff time.Duration, err error) time.Duration {
	var rl *channels.RateLimitError
	if errors.As(err, &rl) {
		return max(backoff, rl.RetryAfter)
	}
	return backoff
}

// Try is the way a step refused for now at start is made: it ends the retry pending, if any,
// and calls try once with ctx. A failure retryable reports true for is retried in the
// background under w's intake — Start, called under the lock w's Stop takes first, so the
// retry ends with the intake and StopIntake waits for it — and Try returns nil (the failure is
// logged). It returns try's error when retrying cannot help, or when the intake does not live
// (not started, or stopped): nothing is retried then.
func (r *LaterRetry) Try(ctx context.Context, w *Workers, retryable func(context.Context, error) bool, try func(context.Context) error) error {
	r.Cancel()
	err := try(ctx)
	if err == nil || !retryable(ctx, err) {
		return err
	}
	if !w.Under(func(life context.Context, wg *sync.WaitGroup) { r.Start(life, wg, err, retryable, try) }) {
		return err
	}
	return nil
}

// Start logs err, the first attempt's failure, and retries try on a goroutine counted in wg
// until it returns nil, returns an error retryable reports false for, or life ends or Cancel or
// the next Start is called. The caller makes sure wg may still be added to (its Stop has not
// begun waiting on it), typically by calling Start under the lock its Stop takes first.
func (r *LaterRetry) Start(life context.Context, wg *sync.WaitGroup, err error,
	retryable func(context.Context, error) bool, try func(context.Context) error) {
	r.mu.Lock()
	if r.cancel != nil {
		r.cancel()
	}
	ctx, cancel := context.WithCancel(life)
	r.cancel = cancel
	r.mu.Unlock()
	r.Log.Warn(r.Failed+"; retrying in the background", append(r.attrs("retry_in", RetryWait(r.Min, err)), "err", err)...)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		r.run(ctx, err, retryable, try)
	}()
}

// Cancel ends the retry pending, if any.
func (r *LaterRetry) Cancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
}

func (r *LaterRetry) run(ctx context.Context, err error, retryable func(context.Context, error) bool, try func(context.Context) error) {
	wait := r.Wait
	if wait == nil {
		wait = Sleep
	}
	backoff := r.Min
	for attempt := 2; ; attempt++ {
		if wait(ctx, RetryWait(backoff, err)) != nil {
			return
		}
		err = try(ctx)
		switch {
		case err == nil:
			r.Log.Info(r.Done, r.attrs("attempts", attempt)...)
			return
		case ctx.Err() != nil:
			return
		case !retryable(ctx, err):
			r.Log.Error(r.Failed+"; not retrying: "+r.GaveUp, append(r.attrs("attempts", attempt), "err", err)...)
			return
		}
		backoff = min(backoff*2, r.Max)
		r.Log.Warn(r.Failed+" again; retrying in the background",
			append(r.attrs("attempts", attempt, "retry_in", RetryWait(backoff, err)), "err", err)...)
	}
}

// attrs is Attrs followed by kv, in a new slice.
func (r *LaterRetry) attrs(kv ...any) []any {
	return append(append(make([]any, 0, len(r.Attrs)+len(kv)+2), r.Attrs...), kv...)
}
