package kit

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// DefaultMaxRetryWait is how long, in all, RetryAfter.Wait waits out one call's rate limits
// when MaxWait is not set.
const DefaultMaxRetryWait = 30 * time.Second

// RetryAfter is where an adapter meets the platform's rate limits (its calls return
// *channels.RateLimitError for a 429). Waiting happens in one place per call, never stacked:
//
//   - Pass, for a call its caller retries — a send, an edit, a delete, a file, a stream update,
//     each of which delivery wraps in channels.RetryRateLimited — counts the rate limit and
//     hands it back at once, so the caller waits it out;
//   - Once, for a call made once and never retried (a typing signal), counts it and hands it
//     back;
//   - Wait, for a call nobody above retries — intake (a lookup the hand-over needs, an
//     interaction's answer), registration, startup — and for the rest of an operation the
//     platform already took part of (the second piece of a long message: the caller's retry
//     would post the first again), waits Retry-After and calls again, while the waits stay
//     within MaxWait and the calls within Attempts.
//
// Every rate limit is counted in Log (kit.RateLimitLog: one line a minute). Set the fields
// before use; safe for concurrent use.
type RetryAfter struct {
	// Log counts the rate limits met; nil counts nothing.
	Log *RateLimitLog
	// MaxWait bounds the waits of one Wait, in all; default DefaultMaxRetryWait.
	MaxWait time.Duration
	// Attempts bounds the calls of one Wait (a platform that bans after too many refused
	// requests); 0: as many as MaxWait allows.
	Attempts int
	// Sleep waits between attempts; nil: Sleep (tests record the waits instead).
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger gets a debug line per wait; nil: none.
	Logger *slog.Logger
}

// Pass returns err unchanged; a rate limit is counted in Log as retried, with its Retry-After
// as the wait: the caller waits it out and tries again (delivery's channels.RetryRateLimited).
func (r *RetryAfter) Pass(method string, err error) error {
	if rl, ok := errors.AsType[*channels.RateLimitError](err); ok {
		r.Log.Limited(method, rl.RetryAfter, true)
	}
	return err
}

// Once returns err unchanged; a rate limit is counted in Log as not retried: the call was best
// effort, made once.
func (r *RetryAfter) Once(method string, err error) error {
	if rl, ok := errors.AsType[*channels.RateLimitError](err); ok {
		r.Log.Limited(method, rl.RetryAfter, false)
	}
	return err
}

// Wait calls f, and again after each *channels.RateLimitError it returns, waiting its
// RetryAfter (at least channels.MinRateWait). It returns f's first other outcome; the rate
// limit itself when the next wait would take the total past MaxWait or the calls are spent;
// and that rate limit joined with ctx's error when ctx ends while waiting.
func (r *RetryAfter) Wait(ctx context.Context, method string, f func(ctx context.Context) error) error {
	maxWait := r.MaxWait
	if maxWait <= 0 {
		maxWait = DefaultMaxRetryWait
	}
	sleep := r.Sleep
	if sleep == nil {
		sleep = Sleep
	}
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		rl, ok := errors.AsType[*channels.RateLimitError](err)
		if !ok {
			return err
		}
		wait := max(rl.RetryAfter, channels.MinRateWait)
		if waited+wait > maxWait || (r.Attempts > 0 && attempt >= r.Attempts) {
			r.Log.Limited(method, rl.RetryAfter, false)
			return err
		}
		r.Log.Limited(method, rl.RetryAfter, true)
		if r.Logger != nil {
			r.Logger.Debug("rate limited; waiting", "method", method, "retry_after", rl.RetryAfter, "wait", wait, "attempt", attempt)
		}
		if serr := sleep(ctx, wait); serr != nil {
			return errors.Join(err, serr)
		}
		waited += wait
	}
}
