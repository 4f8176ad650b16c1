package listen

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWebhookRefusalsAreLoggedOncePerKindPerInterval: a storm of refusals writes one WARN line
// per kind at once, then one per kind when the interval has passed, saying how many were
// refused since; the counter counts every refusal. The clock and the interval's timer are the
// test's.
func TestWebhookRefusalsAreLoggedOncePerKindPerInterval(t *testing.T) {
	o := shortListener()
	o.RefusalLogEvery = time.Minute
	u := startListener(t, o, nil)
	now := time.Now()
	var clock sync.Mutex
	var timers []func()
	u.l.refusals.mu.Lock()
	u.l.refusals.now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	u.l.refusals.after = func(_ time.Duration, f func()) func() bool {
		clock.Lock()
		defer clock.Unlock()
		timers = append(timers, f)
		return func() bool { return true }
	}
	u.l.refusals.mu.Unlock()

	send := func(sig string, length int) int {
		c := u.dial()
		defer c.Close()
		fmt.Fprintf(c, "POST /hook HTTP/1.1\r\nHost: bot\r\nX-Test-Signature: %s\r\nContent-Length: %d\r\n\r\n", sig, length)
		if length < testHookCap {
			_, _ = io.WriteString(c, strings.Repeat("x", length))
		}
		return readAnswer(t, bufio.NewReader(c)).StatusCode
	}
	const forged, oversized = 30, 5
	for range forged {
		if code := send("forged", 10); code != http.StatusUnauthorized {
			t.Fatalf("a forged request answered %d", code)
		}
	}
	for range oversized {
		if code := send("good", 1<<30); code != http.StatusRequestEntityTooLarge {
			t.Fatalf("an oversized request answered %d", code)
		}
	}
	lines := func(kind string) []string {
		var out []string
		for line := range strings.SplitSeq(u.logs.String(), "\n") {
			if strings.Contains(line, `"level":"WARN"`) && strings.Contains(line, `"kind":"`+kind+`"`) {
				out = append(out, line)
			}
		}
		return out
	}
	if got := lines(refusedBadSignature); len(got) != 1 || !strings.Contains(got[0], `"refused":1`) {
		t.Fatalf("bad signature lines during the storm: %q, want one, of the first", got)
	}
	if got := lines(refusedTooLarge); len(got) != 1 {
		t.Fatalf("too large lines during the storm: %q, want one", got)
	}
	if n := u.refused(refusedBadSignature, "/hook"); n != forged {
		t.Errorf("bad_signature counted %v, want %d", n, forged)
	}
	if n := u.refused(refusedTooLarge, "/hook"); n != oversized {
		t.Errorf("too_large counted %v, want %d", n, oversized)
	}

	// The interval passes: each kind's timer writes the count since its first line.
	clock.Lock()
	now = now.Add(time.Minute)
	pending := timers
	timers = nil
	clock.Unlock()
	if len(pending) != 2 {
		t.Fatalf("%d timers pending, want one per kind", len(pending))
	}
	for _, f := range pending {
		f()
	}
	if got := lines(refusedBadSignature); len(got) != 2 || !strings.Contains(got[1], fmt.Sprintf(`"refused":%d`, forged-1)) ||
		!strings.Contains(got[1], fmt.Sprintf(`"paths":"/hook=%d"`, forged-1)) {
		t.Fatalf("bad signature lines after the interval: %q, want a second with %d", got, forged-1)
	}
	if got := lines(refusedTooLarge); len(got) != 2 || !strings.Contains(got[1], fmt.Sprintf(`"refused":%d`, oversized-1)) {
		t.Fatalf("too large lines after the interval: %q", got)
	}
	// A refusal after a quiet interval is logged at once again.
	clock.Lock()
	now = now.Add(2 * time.Minute)
	clock.Unlock()
	send("forged", 1)
	if got := lines(refusedBadSignature); len(got) != 3 || !strings.Contains(got[2], `"refused":1`) {
		t.Fatalf("bad signature lines after a quiet interval: %q", got)
	}
	if strings.Contains(u.logs.String(), "forged") {
		t.Error("a log line holds what the client sent")
	}
}
