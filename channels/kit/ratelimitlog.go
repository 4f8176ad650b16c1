package kit

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// RateLimitLogEvery is the least time between two lines of one RateLimitLog.
const RateLimitLogEvery = time.Minute

// RateLimitLog turns a platform's rate limits into at most one log line a minute, with counts,
// instead of a line per 429: in a storm of thousands the operator reads one line a minute. The
// first rate limit after a calm minute is logged at once; the ones after it are counted and
// logged with the next line, which Flush (called by Run, or at the adapter's Stop) writes once a
// minute has passed. Adapters call Limited at every rate limit they meet. The zero value is not
// usable: make one with NewRateLimitLog. Safe for concurrent use.
type RateLimitLog struct {
	platform string
	log      *slog.Logger
	now      func() time.Time
	// OnLimited, when set, is called at every rate limit, for metrics; it must return quickly.
	// Set it before the log is used.
	OnLimited func(method string, wait time.Duration, retried bool)

	mu      sync.Mutex
	last    time.Time // when the last line was written (zero: never)
	since   time.Time // first rate limit counted since the last line
	limited int
	retried int
	gaveUp  int
	waited  time.Duration
	longest time.Duration
	methods map[string]int
}

// NewRateLimitLog makes the log of platform's rate limits, written to log; now is the clock
// (nil: time.Now).
func NewRateLimitLog(platform string, log *slog.Logger, now func() time.Time) *RateLimitLog {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &RateLimitLog{platform: platform, log: log, now: now, methods: map[string]int{}}
}

// Limited counts one rate limit of method: the platform asked to wait wait, and the call is
// tried again after it (retried: by the adapter, RetryAfter.Wait, or by its caller,
// RetryAfter.Pass) or not (a wait past the adapter's bound, a best-effort call: the
// *RateLimitError is the outcome).
func (l *RateLimitLog) Limited(method string, wait time.Duration, retried bool) {
	if l == nil {
		return
	}
	if l.OnLimited != nil {
		l.OnLimited(method, wait, retried)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.limited == 0 {
		l.since = now
	}
	l.limited++
	if retried {
		l.retried++
		l.waited += wait
	} else {
		l.gaveUp++
	}
	l.longest = max(l.longest, wait)
	l.methods[method]++
	if l.last.IsZero() || now.Sub(l.last) >= RateLimitLogEvery {
		l.lineLocked(now)
	}
}

// Flush writes what was counted since the last line, if anything and if a minute has passed
// since it (force: whatever the time, as at Stop).
func (l *RateLimitLog) Flush(force bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.limited > 0 && (force || now.Sub(l.last) >= RateLimitLogEvery) {
		l.lineLocked(now)
	}
}

// Run flushes every few seconds until ctx ends, so a storm's last minute is logged within
// seconds of the minute, then once more.
func (l *RateLimitLog) Run(ctx context.Context) {
	t := time.NewTicker(RateLimitLogEvery / 6)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.Flush(true)
			return
		case <-t.C:
			l.Flush(false)
		}
	}
}

func (l *RateLimitLog) lineLocked(now time.Time) {
	var by []string
	for _, m := range slices.Sorted(maps.Keys(l.methods)) {
		by = append(by, fmt.Sprintf("%s=%d", m, l.methods[m]))
	}
	l.log.Warn(l.platform+": rate limited (one line a minute at most while it lasts)",
		"platform", l.platform, "limited", l.limited, "retried", l.retried, "gave_up", l.gaveUp,
		"waited", l.waited.Round(time.Millisecond), "longest_wait", l.longest.Round(time.Millisecond),
		"over", now.Sub(l.since).Round(time.Second), "methods", strings.Join(by, " "))
	l.last = now
	l.limited, l.retried, l.gaveUp, l.waited, l.longest = 0, 0, 0, 0, 0
	clear(l.methods)
}
