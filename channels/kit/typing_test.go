package kit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

// typingClock is a settable clock for TypingSignals.
type typingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *typingClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *typingClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestTypingSignalsSendOncePerShowing(t *testing.T) {
	clock := &typingClock{t: time.Unix(1000, 0)}
	s := NewTypingSignals(TypingOptions{Lasts: 4 * time.Second, Now: clock.now})
	defer s.Close()
	var sent atomic.Int32
	send := func(context.Context) error { sent.Add(1); return nil }
	wantSent := func(n int32, what string) {
		t.Helper()
		poll.Until(t, what, func() bool { return sent.Load() == n })
	}

	for range 10 {
		s.Signal("a", send)
	}
	wantSent(1, "one signal for ten asks while it shows")

	clock.add(3 * time.Second)
	s.Signal("a", send)
	s.Signal("b", send)
	wantSent(2, "b's signal (a's still shows)")

	s.Sent("a") // a message ends a's indicator
	s.Signal("a", send)
	wantSent(3, "a's signal after a message was posted")

	clock.add(4 * time.Second)
	s.Signal("b", send)
	wantSent(4, "b's signal once the first stopped showing")
	if n := sent.Load(); n != 4 {
		t.Fatalf("sent %d signals, want 4", n)
	}
}

func TestTypingSignalsDropOneOvertakenByAMessage(t *testing.T) {
	s := NewTypingSignals(TypingOptions{Workers: 1})
	defer s.Close()
	release := make(chan struct{})
	var sent []string
	var mu sync.Mutex
	record := func(key string) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			sent = append(sent, key)
			mu.Unlock()
			return nil
		}
	}
	var blocking atomic.Bool
	s.Signal("first", func(ctx context.Context) error {
		blocking.Store(true)
		<-release // holds the one sender while "late" waits
		return record("first")(ctx)
	})
	poll.Until(t, "the first signal being sent", blocking.Load)
	s.Signal("late", record("late"))
	s.Sent("late") // the answer was posted before the signal went out
	s.Signal("other", record("other"))
	close(release)
	poll.Until(t, "the other signal", func() bool { mu.Lock(); defer mu.Unlock(); return len(sent) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if sent[0] != "first" || sent[1] != "other" {
		t.Fatalf("sent %v, want [first other]: a signal overtaken by a message is dropped", sent)
	}
}

func TestTypingSignalsNeverWaitAndStopAtClose(t *testing.T) {
	s := NewTypingSignals(TypingOptions{Workers: 2, Queue: 3})
	stuck := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	done := make(chan struct{})
	go func() {
		for i := range 20 {
			s.Signal(string(rune('a'+i)), stuck) // two in flight, three waiting, the rest dropped
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(poll.Deadline):
		t.Fatal("Signal waited for the platform")
	}
	s.Close() // cancels the two in flight; returns once they have
	s.Signal("after", func(context.Context) error { t.Error("a signal sent after Close"); return nil })
	s.Close()
}

// With After, a signal waits before it is sent: one whose conversation got a message
// meanwhile (a run answered quickly) is never sent, one still waiting is sent after After, and
// Close does not wait for a signal still waiting.
func TestTypingSignalsWaitAfterAndDropWhatAMessageAnswered(t *testing.T) {
	const after = 150 * time.Millisecond
	s := NewTypingSignals(TypingOptions{Workers: 1, After: after})
	var mu sync.Mutex
	sent := map[string]time.Duration{}
	began := time.Now()
	record := func(key string) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			sent[key] = time.Since(began)
			mu.Unlock()
			return nil
		}
	}
	s.Signal("quick", record("quick"))
	s.Sent("quick") // answered within After
	s.Signal("slow", record("slow"))
	poll.Until(t, "the slow run's signal", func() bool { mu.Lock(); defer mu.Unlock(); return sent["slow"] > 0 })
	mu.Lock()
	if _, ok := sent["quick"]; ok {
		t.Errorf("the quick run's signal was sent, though its answer came first")
	}
	if sent["slow"] < after {
		t.Errorf("the slow run's signal went out after %v, before After (%v)", sent["slow"], after)
	}
	mu.Unlock()

	s2 := NewTypingSignals(TypingOptions{After: time.Hour})
	var late atomic.Bool
	s2.Signal("waiting", func(context.Context) error { late.Store(true); return nil })
	s2.Close() // returns without waiting the hour
	s.Close()
	if late.Load() {
		t.Fatal("a signal still waiting at Close was sent")
	}
}
