package runs

import (
	"log/slog"
	"sync"
	"time"
)

// rescueQuiet is how long the rescues of one kind must stop before the next one is a new
// incident (rescueLog).
const rescueQuiet = time.Minute

// rescueSample bounds the conversation tags an incident's warning names.
const rescueSample = 3

// rescueLog reports the rescues of one kind (the unhinted index's, the backstop scan's) per
// incident, not per conversation: a burst that leaves hundreds of conversations to rescue is
// one thing for an operator to look at, not hundreds.
//
// An incident is a spell of rescue passes — a recoverer tick's rescue of the unhinted index, or
// one rescue scan — that each rescued at least one conversation, with less than rescueQuiet
// between the last rescue and the next: one cause (an enqueuer that died with runs between its
// two steps, Redis failing under enqueues in flight, a start after a version without the index)
// seen over a few passes. The incident's first pass logs one Warn with the number of
// conversations it rescued and a few of their tags; each conversation gets a Debug line; later
// passes of the same incident are Debug only, and when the incident ends — the first pass that
// rescues nothing once rescueQuiet has passed since the last rescue — an Info line gives its
// totals if those later passes rescued more. Safe for concurrent use.
type rescueLog struct {
	log *slog.Logger
	msg string // the Warn's message, e.g. "runs: rescued conversations …"
	now func() time.Time

	mu          sync.Mutex
	since, last time.Time // the incident's first and latest rescue; since is zero between incidents
	first       int       // conversations the incident's first pass rescued
	total       int       // conversations the incident rescued in all
}

func newRescueLog(log *slog.Logger, msg string) *rescueLog {
	return &rescueLog{log: log, msg: msg, now: time.Now}
}

// pass records one rescue pass that rescued the conversations tags (none: a pass that found
// nothing to rescue).
func (l *rescueLog) pass(tags []string) {
	now := l.now()
	l.mu.Lock()
	quiet := !l.since.IsZero() && now.Sub(l.last) >= rescueQuiet
	// The incident that ended, when passes after its first rescued more: its end is worth a line.
	overTotal, overLasted := 0, time.Duration(0)
	if quiet {
		if l.total > l.first {
			overTotal, overLasted = l.total, l.last.Sub(l.since)
		}
		l.since, l.first, l.total = time.Time{}, 0, 0
	}
	fresh := len(tags) > 0 && l.since.IsZero()
	if len(tags) > 0 {
		if fresh {
			l.since, l.first = now, len(tags)
		}
		l.last = now
		l.total += len(tags)
	}
	total := l.total
	l.mu.Unlock()
	if overTotal > 0 {
		l.log.Info(l.msg+": incident over", "conversations", overTotal, "lasted", overLasted.Round(time.Millisecond))
	}
	switch {
	case fresh:
		l.log.Warn(l.msg, "conversations", len(tags), "tags", tags[:min(len(tags), rescueSample)])
	case len(tags) > 0:
		l.log.Debug(l.msg+": the incident goes on", "conversations", len(tags), "incident_total", total)
	}
}
