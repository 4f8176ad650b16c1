package channels

import (
	"context"
	"errors"
	"time"
)

// MinRateWait is the shortest wait after a rate limit, so that a Retry-After of nothing never
// makes a tight loop of refused requests (RetryRateLimited here, kit.RetryAfter in adapters).
const MinRateWait = 50 * time.Millisecond

// ErrPartlyPosted is matched (errors.Is) by the error of a send of several pieces that failed
// after posting some of them: sent again as it is, the pieces posted would show twice.
var ErrPartlyPosted = errors.New("channels: a message was posted in part")

// RetryRateLimited calls f, and again after the platform's Retry-After each time it returns a
// *RateLimitError, up to attempts calls in all. A wait longer than maxWait is cut to maxWait.
// It returns f's last error, or ctx's error if ctx ends while waiting. An error that is also
// ErrPartlyPosted is returned at once.
func RetryRateLimited(ctx context.Context, maxWait time.Duration, attempts int, f func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		var rl *RateLimitError
		if err == nil || !errors.As(err, &rl) || attempt >= attempts {
			return err
		}
		if errors.Is(err, ErrPartlyPosted) {
			return err // sent again, the pieces left would show twice
		}
		wait := min(max(rl.RetryAfter, MinRateWait), maxWait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}
