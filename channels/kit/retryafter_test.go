package kit

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/logbuf"
)

// recordedWaits stands in for Sleep: it records each wait and returns ctx's error.
type recordedWaits []time.Duration

func (w *recordedWaits) sleep(ctx context.Context, d time.Duration) error {
	*w = append(*w, d)
	return ctx.Err()
}

// limitedThen answers a rate limit of retryAfter n times, then err.
func limitedThen(n int, retryAfter time.Duration, err error) (f func(context.Context) error, calls *int) {
	calls = new(int)
	return func(context.Context) error {
		*calls++
		if *calls <= n {
			return &channels.RateLimitError{RetryAfter: retryAfter}
		}
		return err
	}, calls
}

// TestRetryAfterWaitWaitsOutRateLimitsWithinItsBounds proves Wait calls again after each rate
// limit's Retry-After (never sooner than 50 ms), returns the first other outcome, and gives the
// rate limit back once the next wait would pass MaxWait in all or the calls are spent — each
// rate limit counted in the log, as retried or not.
func TestRetryAfterWaitWaitsOutRateLimitsWithinItsBounds(t *testing.T) {
	done := errors.New("refused")
	for _, tc := range []struct {
		name       string
		maxWait    time.Duration
		attempts   int
		limited    int
		retryAfter time.Duration
		wantErr    error // nil: a *channels.RateLimitError
		wantCalls  int
		wantWaits  []time.Duration
	}{
		{"waited out", time.Minute, 0, 2, time.Second, done, 3, []time.Duration{time.Second, time.Second}},
		{"floor on the wait", time.Minute, 0, 1, 0, done, 2, []time.Duration{50 * time.Millisecond}},
		{"past MaxWait", 2500 * time.Millisecond, 0, 5, time.Second, nil, 3, []time.Duration{time.Second, time.Second}},
		{"calls spent", time.Hour, 3, 5, time.Second, nil, 3, []time.Duration{time.Second, time.Second}},
		{"no rate limit", time.Minute, 0, 0, 0, nil, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var waits recordedWaits
			log := NewRateLimitLog("test", quietLog, nil)
			var retried, returned int
			log.OnLimited = func(_ string, _ time.Duration, again bool) {
				if again {
					retried++
				} else {
					returned++
				}
			}
			r := &RetryAfter{Log: log, MaxWait: tc.maxWait, Attempts: tc.attempts, Sleep: waits.sleep}
			final := tc.wantErr
			f, calls := limitedThen(tc.limited, tc.retryAfter, final)
			err := r.Wait(context.Background(), "send", f)
			if tc.wantErr != nil || tc.limited == 0 {
				if err != tc.wantErr {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
			} else if rl, ok := errors.AsType[*channels.RateLimitError](err); !ok || rl.RetryAfter != tc.retryAfter {
				t.Fatalf("err %v, want the rate limit of %v", err, tc.retryAfter)
			}
			if *calls != tc.wantCalls || len(waits) != len(tc.wantWaits) {
				t.Fatalf("%d calls, waits %v; want %d calls, waits %v", *calls, waits, tc.wantCalls, tc.wantWaits)
			}
			for i := range waits {
				if waits[i] != tc.wantWaits[i] {
					t.Fatalf("waits %v, want %v", waits, tc.wantWaits)
				}
			}
			gaveBack := 0
			if _, ok := errors.AsType[*channels.RateLimitError](err); ok {
				gaveBack = 1
			}
			if retried != len(tc.wantWaits) || returned != gaveBack {
				t.Fatalf("log counted %d retried, %d returned; want %d, %d", retried, returned, len(tc.wantWaits), gaveBack)
			}
		})
	}
}

// TestRetryAfterWaitEndsWithTheContext proves a wait cut short by ctx returns the rate limit
// joined with ctx's error.
func TestRetryAfterWaitEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var waits recordedWaits
	r := &RetryAfter{Sleep: waits.sleep}
	f, calls := limitedThen(5, time.Second, nil)
	err := r.Wait(ctx, "send", f)
	if _, ok := errors.AsType[*channels.RateLimitError](err); !ok || !errors.Is(err, context.Canceled) || *calls != 1 {
		t.Fatalf("err %v after %d calls, want the rate limit and context.Canceled after one", err, *calls)
	}
}

// TestRetryAfterPassAndOnceHandTheRateLimitBackAtOnce proves Pass and Once never wait: the
// error comes back as it is, a rate limit counted in the log as retried (by the caller) for
// Pass, as not retried for Once.
func TestRetryAfterPassAndOnceHandTheRateLimitBackAtOnce(t *testing.T) {
	var logs logbuf.Buffer
	log := NewRateLimitLog("test", slog.New(slog.NewTextHandler(&logs, nil)), nil)
	var waited time.Duration
	log.OnLimited = func(_ string, d time.Duration, again bool) {
		if again {
			waited += d
		}
	}
	r := &RetryAfter{Log: log}
	rl := &channels.RateLimitError{RetryAfter: 3 * time.Second}
	if err := r.Pass("chat.postMessage", rl); err != error(rl) {
		t.Fatalf("Pass returned %v, want the rate limit itself", err)
	}
	if err := r.Once("typing", rl); err != error(rl) {
		t.Fatalf("Once returned %v, want the rate limit itself", err)
	}
	other := errors.New("other")
	if err := r.Pass("chat.postMessage", other); err != other || r.Once("typing", other) != other {
		t.Fatalf("Pass or Once changed %v", other)
	}
	if r.Pass("x", nil) != nil || r.Once("x", nil) != nil {
		t.Fatal("Pass or Once of nil is not nil")
	}
	log.Flush(true)
	s := logs.String()
	if !strings.Contains(s, "retried=1") || !strings.Contains(s, "gave_up=1") ||
		!strings.Contains(s, "chat.postMessage=1") || !strings.Contains(s, "typing=1") || waited != 3*time.Second {
		t.Fatalf("the log line does not count one rate limit retried by the caller (3s) and one not:\n%s", s)
	}
}
