package kit

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/logbuf"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// stormLines decodes the JSON log lines of buf.
func stormLines(t *testing.T, buf *logbuf.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestRateLimitStormLoggedOnceAMinute proves a storm of 429s is logged once a minute with its
// counts, not once per 429: the first at once, the rest of the minute in the next line, the
// storm's tail at Stop, and the first 429 after a calm at once again.
func TestRateLimitStormLoggedOnceAMinute(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	buf := &logbuf.Buffer{}
	l := NewRateLimitLog("telegram", slog.New(slog.NewJSONHandler(buf, nil)), clock.Now)
	var metered int
	l.OnLimited = func(string, time.Duration, bool) { metered++ }

	l.Limited("sendMessage", time.Second, true)
	if n := len(stormLines(t, buf)); n != 1 {
		t.Fatalf("%d lines after the first 429, want 1 at once", n)
	}
	// 590 more over the next 59 s: 500 waited out, 90 given up.
	for i := range 590 {
		clock.Advance(100 * time.Millisecond)
		method, retried := "editMessageText", i < 500
		if i%2 == 0 {
			method = "sendMessage"
		}
		l.Limited(method, 2*time.Second, retried)
	}
	l.Flush(false)
	if n := len(stormLines(t, buf)); n != 1 {
		t.Fatalf("%d lines within the first minute of the storm, want 1", n)
	}
	clock.Advance(time.Second) // a minute since the first line
	l.Flush(false)
	lines := stormLines(t, buf)
	if len(lines) != 2 {
		t.Fatalf("%d lines a minute into the storm, want 2", len(lines))
	}
	second := lines[1]
	want := map[string]any{"platform": "telegram", "limited": 590.0, "retried": 500.0, "gave_up": 90.0, "waited": float64(1000 * time.Second), "longest_wait": float64(2 * time.Second),
		"methods": "editMessageText=295 sendMessage=295", "level": "WARN"}
	for k, v := range want {
		if second[k] != v {
			t.Errorf("the minute's line has %s = %v, want %v (line %v)", k, second[k], v, second)
		}
	}
	// The storm's tail: counted, logged at Stop whatever the time.
	clock.Advance(time.Second)
	l.Limited("sendMessage", time.Second, true)
	if n := len(stormLines(t, buf)); n != 2 {
		t.Fatalf("a 429 a second after a line wrote one: %d lines", n)
	}
	l.Flush(true)
	lines = stormLines(t, buf)
	if len(lines) != 3 || lines[2]["limited"] != 1.0 {
		t.Fatalf("the tail's line: %v", lines)
	}
	l.Flush(true)
	if n := len(stormLines(t, buf)); n != 3 {
		t.Errorf("a flush with nothing counted wrote a line")
	}
	// After a calm, the next 429 is logged at once.
	clock.Advance(10 * time.Minute)
	l.Limited("sendMessage", time.Second, false)
	if n := len(stormLines(t, buf)); n != 4 {
		t.Errorf("%d lines after a 429 following a calm, want it logged at once", n)
	}
	if metered != 593 {
		t.Errorf("OnLimited saw %d rate limits, want 593", metered)
	}
	var nilLog *RateLimitLog
	nilLog.Limited("x", time.Second, true) // adapters without a log do nothing
	nilLog.Flush(true)
}
