package listen

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The kinds of refusal the listener counts and logs (switchboard_http_refused_total's kind).
const (
	refusedBadSignature    = "bad_signature"    // the handler answered 401
	refusedTooLarge        = "too_large"        // 413: announced or read past the platform's cap
	refusedTooSlow         = "too_slow"         // 408: the body missed its deadline
	refusedOverCapacity    = "over_capacity"    // 503: the route's budget was full
	refusedHandoverTimeout = "handover_timeout" // 503: the handler did not answer in time
	refusedConnectionLimit = "connection_limit" // a connection closed to make room at MaxConns
)

// refusalHints say what a kind of refusal means to the operator.
var refusalHints = map[string]string{
	refusedBadSignature:    "requests whose signature or secret did not check: probes, or a signing secret, public key or webhook secret that differs from the platform's",
	refusedTooLarge:        "bodies over the platform's size cap, refused with 413 without being read",
	refusedTooSlow:         "bodies that did not arrive within the read deadline, refused with 408",
	refusedOverCapacity:    "requests refused with 503 and Retry-After because their budget of concurrent requests was full",
	refusedHandoverTimeout: "requests answered 503 because their handler had not answered in time (is Redis slow or unreachable?); Slack and Telegram retry their deliveries",
	refusedConnectionLimit: "connections closed to make room at the connection limit: the longest idle, or the newcomer when all were busy",
}

// refusalLog counts the listener's refusals into switchboard_http_refused_total and logs them
// at most once per kind per interval: the first refusal of a kind after a quiet interval is
// logged at once; those after it are counted and logged, with how many and on which paths, by
// the next line of their kind, written when the interval has passed (at the next refusal, or
// by a timer). A storm of forged requests writes one line a minute, not one a request. close
// (at the server's Shutdown) writes what is left.
type refusalLog struct {
	log     *slog.Logger
	every   time.Duration
	counter *prometheus.CounterVec
	now     func() time.Time
	// after runs f after d and returns its cancel (time.AfterFunc; tests drive it).
	after func(d time.Duration, f func()) (cancel func() bool)

	mu     sync.Mutex
	kinds  map[string]*refusalTally
	closed bool
}

// refusalTally is what one kind of refusal counted since its last line.
type refusalTally struct {
	last    time.Time // when the last line was written; zero: never
	first   time.Time // the first refusal counted since
	n       int
	paths   map[string]int
	remote  string      // of the latest refusal
	pending func() bool // cancels the timer that writes the next line; nil: none
}

func newRefusalLog(log *slog.Logger, every time.Duration, counter *prometheus.CounterVec) *refusalLog {
	if log == nil {
		log = slog.Default()
	}
	return &refusalLog{log: log, every: every, counter: counter, now: time.Now, kinds: map[string]*refusalTally{},
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }}
}

// refuse counts one refusal of kind on path (empty for a connection), from remote.
func (l *refusalLog) refuse(kind, path, remote string) {
	l.counter.WithLabelValues(kind, path).Inc()
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.kinds[kind]
	if t == nil {
		t = &refusalTally{paths: map[string]int{}}
		l.kinds[kind] = t
	}
	now := l.now()
	if t.n == 0 {
		t.first = now
	}
	t.n++
	t.paths[path]++
	t.remote = remote
	if t.last.IsZero() || now.Sub(t.last) >= l.every {
		l.lineLocked(kind, t, now)
		return
	}
	if t.pending == nil && !l.closed {
		t.pending = l.after(t.last.Add(l.every).Sub(now), func() { l.flush(kind) })
	}
}

// flush writes kind's line if anything was counted since the last (its timer's work).
func (l *refusalLog) flush(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.kinds[kind]
	t.pending = nil
	if t.n > 0 {
		l.lineLocked(kind, t, l.now())
	}
}

// close writes every kind's count not written yet and stops the timers.
func (l *refusalLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, kind := range slices.Sorted(maps.Keys(l.kinds)) {
		t := l.kinds[kind]
		if t.pending != nil {
			t.pending()
			t.pending = nil
		}
		if t.n > 0 {
			l.lineLocked(kind, t, l.now())
		}
	}
}

func (l *refusalLog) lineLocked(kind string, t *refusalTally, now time.Time) {
	var paths []string
	for _, p := range slices.Sorted(maps.Keys(t.paths)) {
		name := p
		if name == "" {
			name = "(connection)"
		}
		paths = append(paths, fmt.Sprintf("%s=%d", name, t.paths[p]))
	}
	attrs := []any{"kind", kind, "refused", t.n, "over", now.Sub(t.first).Round(time.Second),
		"paths", strings.Join(paths, " "), "meaning", refusalHints[kind]}
	if t.remote != "" {
		attrs = append(attrs, "last_remote", t.remote)
	}
	l.log.Warn("http: refused (one line per kind a minute at most while it lasts)", attrs...)
	t.last, t.n = now, 0
	clear(t.paths)
}
