package runs

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// How the components ride out a Redis outage. Every loop that calls Redis backs off while the
// calls fail (outageBackoff: from outageRetryBase doubling up to outageRetryMax, with jitter), so
// an unreachable Redis costs a few calls per second in all, not a hot loop; and once Redis
// answers again each loop is back within outageRetryMax. Each repeated failure is logged as a few
// lines (failureLog), not one per retry.
const (
	outageRetryBase = 100 * time.Millisecond
	outageRetryMax  = 2 * time.Second
	// failureLogEvery is the least time between two lines about one failure that goes on.
	failureLogEvery = 5 * time.Second
)

// outageBackoff is the wait after the nth failure in a row (n ≥ 1): exponential, capped at
// outageRetryMax, with jitter over its upper half.
func outageBackoff(n int) time.Duration {
	d := outageRetryBase << min(max(n-1, 0), 10)
	if d > outageRetryMax {
		d = outageRetryMax
	}
	return d/2 + rand.N(d/2+1)
}

// unreachable reports whether err says Redis could not be reached or could not serve the call
// now — the connection refused, reset or timed out, the server still loading its data or
// without a master — so the call should be tried again later; a Redis error reply about the
// call itself (a script error, a wrong type) is not.
func unreachable(err error) bool {
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, redis.ErrClosed):
		return false
	case isNetError(err): // refused, reset, timed out (context.DeadlineExceeded is one too)
		return true
	case redis.IsLoadingError(err), redis.IsReadOnlyError(err), redis.IsMasterDownError(err),
		redis.IsClusterDownError(err), redis.IsTryAgainError(err), redis.IsMaxClientsError(err):
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		return false // Redis answered: the call itself was refused
	}
	return true // no answer at all: the connection closed (EOF), the pool timed out
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// retryRedis calls f until it succeeds, fails with an error that is not unreachable, or ctx
// ends, backing off between calls and logging the failures through fl. It returns f's last
// error, or ctx's cause when ctx ended first.
func retryRedis(ctx context.Context, fl *failureLog, f func() error, attrs ...any) error {
	for n := 1; ; n++ {
		err := f()
		if err == nil {
			fl.ok()
			return nil
		}
		if !unreachable(err) {
			return err
		}
		fl.fail(err, attrs...)
		if !waitFor(ctx, outageBackoff(n)) {
			return errors.Join(err, context.Cause(ctx))
		}
	}
}

// failureLog logs one component's failure that repeats — Redis unreachable, say — as a few
// lines instead of one per retry: the first failure at once (Warn), then at most one line per
// failureLogEvery with the failures counted since the spell began, and one line (Info) when the
// component recovers. It is safe for concurrent use: the workers share one per operation.
type failureLog struct {
	log       *slog.Logger
	msg       string // the failure's line, e.g. "runs: reading hints failed; retrying"
	component string // names the component in the recovery line

	mu      sync.Mutex
	n       int       // failures in the current spell; 0 while working
	since   time.Time // first failure of the spell
	logged  time.Time // last line about the spell
	skipped int       // failures not logged since that line
}

func newFailureLog(log *slog.Logger, component, msg string) *failureLog {
	return &failureLog{log: log, component: component, msg: msg}
}

// fail records one failure and logs it unless a line about this spell was logged less than
// failureLogEvery ago.
func (f *failureLog) fail(err error, attrs ...any) {
	f.mu.Lock()
	now := time.Now()
	f.n++
	if f.n == 1 {
		f.since = now
	} else if now.Sub(f.logged) < failureLogEvery {
		f.skipped++
		f.mu.Unlock()
		return
	}
	n, since, skipped := f.n, f.since, f.skipped
	f.logged, f.skipped = now, 0
	f.mu.Unlock()
	args := append([]any{"err", err}, attrs...)
	if n > 1 {
		args = append(args, "failures", n, "failing_for", now.Sub(since).Round(time.Millisecond), "not_logged", skipped)
	}
	f.log.Warn(f.msg, args...)
}

// failing reports whether a spell of failures is going on.
func (f *failureLog) failing() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n > 0
}

// ok ends a spell of failures, logging that the component recovered.
func (f *failureLog) ok() {
	f.mu.Lock()
	n, since := f.n, f.since
	f.n, f.skipped = 0, 0
	f.mu.Unlock()
	if n > 0 {
		f.log.Info("runs: "+f.component+" recovered", "failures", n, "failed_for", time.Since(since).Round(time.Millisecond))
	}
}
