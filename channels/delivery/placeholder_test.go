package delivery

import (
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// manualTimers replaces time.AfterFunc in a Delivery: a test fires the scheduled callbacks by
// hand, so "before the grace period ends" and "after" are decided by the test, not the clock.
type manualTimers struct {
	mu      sync.Mutex
	pending []*manualTimer
}

type manualTimer struct {
	m     *manualTimers
	f     func()
	state int // 0 scheduled, 1 stopped, 2 fired
}

func (m *manualTimers) AfterFunc(_ time.Duration, f func()) stopper {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &manualTimer{m: m, f: f}
	m.pending = append(m.pending, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.state != 0 {
		return false
	}
	t.state = 1
	return true
}

// fire runs every scheduled, unstopped callback (as its timer would) and returns how many ran.
func (m *manualTimers) fire() int {
	m.mu.Lock()
	var due []*manualTimer
	for _, t := range m.pending {
		if t.state == 0 {
			t.state = 2
			due = append(due, t)
		}
	}
	m.pending = nil
	m.mu.Unlock()
	for _, t := range due {
		t.f()
	}
	return len(due)
}

// scheduled is how many callbacks wait to be fired.
func (m *manualTimers) scheduled() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, t := range m.pending {
		if t.state == 0 {
			n++
		}
	}
	return n
}

// lazyDelivery is a Delivery with a grace period whose end the test decides with timers.fire.
func (h *deliveryHarness) lazyDelivery(ch channels.Channel) (*Delivery, *manualTimers) {
	h.t.Helper()
	d := h.delivery(ch, func(o *Options) { o.PlaceholderAfter = DefaultPlaceholderAfter })
	timers := &manualTimers{}
	d.afterFunc = timers.AfterFunc
	return d, timers
}

func (h *deliveryHarness) typingCount() int {
	h.ch.Mu.Lock()
	defer h.ch.Mu.Unlock()
	return h.ch.Typings
}

func (h *deliveryHarness) recorded(run, step string) bool {
	h.t.Helper()
	_, found, err := h.store.Outbound(h.ctx, run, step)
	if err != nil {
		h.t.Fatal(err)
	}
	return found
}

// runReceivedAgo is a run id whose receipt (its ULID time) was ago.
func runReceivedAgo(ago time.Duration) string {
	return ulid.MustNew(ulid.Timestamp(time.Now().Add(-ago)), rand.Reader).String()
}

// TestFastAnswerPostsOneMessage proves a run closing within the grace period — whatever closes
// it — is shown as one message: the closing card, replying to the message the run answers,
// carrying the progress state kept meanwhile, never preceded by a placeholder nor edited. It is
// recorded as the run's final, so a replay of the run posts and edits nothing. No typing is
// signalled on started (the router's, at receipt, still shows) unless the run was received long
// enough ago for it to have expired.
func TestFastAnswerPostsOneMessage(t *testing.T) {
	cases := []struct {
		name  string
		close func(run string) runs.Event
		want  []string
	}{
		{"answer", func(run string) runs.Event { return final(run, "The answer is 42.") },
			[]string{"The answer is 42.", "flights", "Cheapest on Tuesday"}},
		{"question", func(run string) runs.Event {
			return runs.Event{RunID: run, Kind: runs.EventClarification, Text: "Before I book:", Form: &runs.Form{ID: "q01FAST", Question: "How many people?", Fields: peopleForm.Fields}}
		}, []string{"Before I book:", "How many people?", "1. 2"}},
		{"failure", func(run string) runs.Event {
			return runs.Event{RunID: run, Kind: runs.EventFailed, Reason: "The model declined."}
		}, []string{"The model declined."}},
		{"cancellation", func(run string) runs.Event {
			return runs.Event{RunID: run, Kind: runs.EventCancelled, Reason: "Cancelled by you."}
		}, []string{"Cancelled by you."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newDeliveryHarness(t)
			d, timers := h.lazyDelivery(h.ch)
			run := runs.NewRunID()
			h.deliver(d, startedAnswering(run, "55"), progress(run, "searching"), subResult(run, "s1", "flights", "Cheapest on Tuesday"))
			if n := len(h.ch.Sent()); n != 0 {
				t.Fatalf("%d messages posted within the grace period, want none", n)
			}
			h.deliver(d, tc.close(run))
			s := h.ch.Sent()
			if len(s) != 1 || s[0].To.ReplyTo != "55" {
				t.Fatalf("sent %+v, want one message replying to 55", s)
			}
			for _, w := range tc.want {
				if !strings.Contains(s[0].Text, w) {
					t.Errorf("the message lacks %q:\n%s", w, s[0].Text)
				}
			}
			if strings.Contains(s[0].Text, "Working") {
				t.Errorf("the one message is a working card:\n%s", s[0].Text)
			}
			if n := h.ch.EditCount(); n != 0 {
				t.Errorf("%d edits, want none", n)
			}
			if n := timers.fire(); n != 0 {
				t.Errorf("%d grace periods still running after the closing event", n)
			}
			if n := h.typingCount(); n != 0 {
				t.Errorf("typing signalled %d times on started, want 0 (the receipt's still shows)", n)
			}
			if !h.recorded(run, StepFinal) {
				t.Error("the one message is not recorded as the run's final")
			}

			again, againTimers := h.lazyDelivery(h.ch)
			h.deliver(again, started(run), progress(run, "searching"), tc.close(run))
			if n, e := len(h.ch.Sent()), h.ch.EditCount(); n != 1 || e != 0 {
				t.Errorf("after a replay: %d posts and %d edits, want 1 and 0", n, e)
			}
			if n := againTimers.scheduled(); n != 0 {
				t.Errorf("the replay of a delivered run started %d grace periods", n)
			}
		})
	}

	t.Run("typing again when the receipt's has expired", func(t *testing.T) {
		h := newDeliveryHarness(t)
		d, _ := h.lazyDelivery(h.ch)
		run := runReceivedAgo(typingLasts + time.Second)
		h.deliver(d, started(run))
		if n := h.typingCount(); n != 1 {
			t.Errorf("typing signalled %d times for a run received %s ago, want 1", n, typingLasts+time.Second)
		}
		h.deliver(d, final(run, "Late but here."))
		if n := len(h.ch.Sent()); n != 1 {
			t.Errorf("%d posts, want 1", n)
		}
	})
}

// TestSlowRunGetsPlaceholderThenEdit proves a run outlasting the grace period gets the working
// placeholder when it ends — in reply to the message answered, showing the progress and
// subagent results that arrived meanwhile, recorded as the run's card — and that later progress
// and the answer are edits of that one message. A real timer posts it too.
func TestSlowRunGetsPlaceholderThenEdit(t *testing.T) {
	h := newDeliveryHarness(t)
	d, timers := h.lazyDelivery(h.ch)
	run := runs.NewRunID()
	h.deliver(d, startedAnswering(run, "55"), progress(run, "searching flights"), subResult(run, "s1", "flights", "Cheapest on Tuesday"))
	if n := len(h.ch.Sent()); n != 0 {
		t.Fatalf("%d messages posted within the grace period, want none", n)
	}
	if n := timers.fire(); n != 1 {
		t.Fatalf("%d grace periods ended, want 1", n)
	}
	s := h.ch.Sent()
	if len(s) != 1 || s[0].To.ReplyTo != "55" {
		t.Fatalf("sent %+v, want the placeholder replying to 55", s)
	}
	for _, w := range []string{"Working", "searching flights", "flights", "Cheapest on Tuesday"} {
		if !strings.Contains(s[0].Text, w) {
			t.Errorf("the placeholder lacks %q:\n%s", w, s[0].Text)
		}
	}
	if !h.recorded(run, StepCard) {
		t.Error("the placeholder is not recorded as the run's card")
	}
	h.deliver(d, progress(run, "comparing prices"))
	if v := h.ch.Visible(); len(v) != 1 || !strings.Contains(v[0], "comparing prices") {
		t.Errorf("visible %q, want the progress edited into the placeholder", v)
	}
	h.deliver(d, final(run, "Book Tuesday."))
	if n := len(h.ch.Sent()); n != 1 {
		t.Errorf("%d posts, want 1 (the answer edits the placeholder)", n)
	}
	v := h.ch.Visible()
	if len(v) != 1 || !strings.Contains(v[0], "Book Tuesday.") || strings.Contains(v[0], "Working") {
		t.Errorf("visible %q, want the answer in the placeholder", v)
	}

	t.Run("real timer", func(t *testing.T) {
		h := newDeliveryHarness(t)
		d := h.delivery(h.ch, func(o *Options) { o.PlaceholderAfter = 5 * time.Millisecond })
		run := runs.NewRunID()
		h.deliver(d, started(run))
		waitFor(t, "the placeholder", func() bool {
			s := h.ch.Sent()
			return len(s) == 1 && strings.Contains(s[0].Text, "Working")
		})
		h.deliver(d, final(run, "Took a while."))
		if v := h.ch.Visible(); len(h.ch.Sent()) != 1 || len(v) != 1 || !strings.Contains(v[0], "Took a while.") {
			t.Errorf("visible %q, want the answer edited into the placeholder", v)
		}
	})
}

// TestNoticeIsShownWithoutWaitingOutTheGracePeriod proves a notice (the model is not
// answering; the run will be tried again) is posted at once, on the placeholder, however early
// in the grace period it comes — the user learns now why the answer is late — and that the
// answer of the retried attempt, however soon it follows, replaces it in that one message.
func TestNoticeIsShownWithoutWaitingOutTheGracePeriod(t *testing.T) {
	h := newDeliveryHarness(t)
	d, timers := h.lazyDelivery(h.ch)
	run := runs.NewRunID()
	h.deliver(d, attempt(1, "55", started(run), notice(run, "The model is not answering right now."))...)
	s := h.ch.Sent()
	if len(s) != 1 || s[0].To.ReplyTo != "55" || !strings.Contains(s[0].Text, "not answering") {
		t.Fatalf("sent %+v, want the notice posted at once, replying to 55", s)
	}
	if n := timers.scheduled(); n != 0 {
		t.Errorf("%d grace periods still owed after the notice was posted", n)
	}
	h.deliver(d, attempt(2, "55", started(run), final(run, "Back: the answer."))...)
	if n := len(h.ch.Sent()); n != 1 {
		t.Errorf("%d posts, want 1 (the answer edits the notice)", n)
	}
	if v := h.ch.Visible(); len(v) != 1 || !strings.Contains(v[0], "Back: the answer.") || strings.Contains(v[0], "not answering") {
		t.Errorf("visible %q, want only the answer", v)
	}
}

// TestReplayDuringGracePeriodNeverDoublePosts proves a run delivered by more than one attempt —
// a crash during the grace period, another attempt answering while the first still waits, a
// replay after the placeholder or after the answer, a second attempt in the same process — ends
// with exactly one message, the answer.
func TestReplayDuringGracePeriodNeverDoublePosts(t *testing.T) {
	checkOne := func(t *testing.T, h *deliveryHarness, answer string) {
		t.Helper()
		if n := len(h.ch.Sent()); n != 1 {
			t.Errorf("%d posts, want 1", n)
		}
		if v := h.ch.Visible(); len(v) != 1 || !strings.Contains(v[0], answer) {
			t.Errorf("visible %q, want only the answer %q", v, answer)
		}
	}
	t.Run("crash during the grace period", func(t *testing.T) {
		h := newDeliveryHarness(t)
		crashed, crashedTimers := h.lazyDelivery(h.ch)
		run := runs.NewRunID()
		h.deliver(crashed, started(run), progress(run, "searching"))
		crashed.Close() // the process dies: its grace period ends with it, nothing was posted
		replay, _ := h.lazyDelivery(h.ch)
		h.deliver(replay, started(run), progress(run, "searching again"), final(run, "Found it."))
		if n := crashedTimers.fire(); n != 0 {
			t.Errorf("%d grace periods of the closed delivery still running", n)
		}
		checkOne(t, h, "Found it.")
	})
	t.Run("another attempt answers while the first waits", func(t *testing.T) {
		h := newDeliveryHarness(t)
		first, firstTimers := h.lazyDelivery(h.ch)
		run := runs.NewRunID()
		h.deliver(first, started(run))
		second, _ := h.lazyDelivery(h.ch)
		h.deliver(second, started(run), final(run, "Second attempt's answer."))
		if n := firstTimers.fire(); n != 1 {
			t.Fatalf("%d grace periods ended, want the first attempt's", n)
		}
		h.deliver(first, progress(run, "still going"), final(run, "First attempt's answer."))
		checkOne(t, h, "Second attempt's answer.")
		if n := h.ch.EditCount(); n != 0 {
			t.Errorf("%d edits of the delivered answer, want none", n)
		}
	})
	t.Run("replay after the placeholder was posted", func(t *testing.T) {
		h := newDeliveryHarness(t)
		crashed, crashedTimers := h.lazyDelivery(h.ch)
		run := runs.NewRunID()
		h.deliver(crashed, started(run), progress(run, "searching"))
		crashedTimers.fire()
		crashed.Close()
		replay, replayTimers := h.lazyDelivery(h.ch)
		h.deliver(replay, started(run))
		if n := replayTimers.scheduled(); n != 0 {
			t.Errorf("the replay started %d grace periods; it edits the recorded placeholder", n)
		}
		h.deliver(replay, progress(run, "searching again"), final(run, "Found it."))
		checkOne(t, h, "Found it.")
	})
	t.Run("replay after a fast answer", func(t *testing.T) {
		h := newDeliveryHarness(t)
		d, _ := h.lazyDelivery(h.ch)
		run := runs.NewRunID()
		h.deliver(d, started(run), final(run, "Quick."))
		replay, replayTimers := h.lazyDelivery(h.ch)
		h.deliver(replay, started(run), progress(run, "again"), final(run, "Quick again."))
		replayTimers.fire()
		checkOne(t, h, "Quick.")
		if n := h.ch.EditCount(); n != 0 {
			t.Errorf("%d edits, want none", n)
		}
	})
	t.Run("second attempt in the same process", func(t *testing.T) {
		h := newDeliveryHarness(t)
		d, timers := h.lazyDelivery(h.ch)
		run := runs.NewRunID()
		h.deliver(d, started(run), started(run))
		if n := timers.scheduled(); n != 1 {
			t.Errorf("%d grace periods for one run, want 1", n)
		}
		h.deliver(d, final(run, "Once."))
		timers.fire()
		checkOne(t, h, "Once.")
	})
}

// TestCloseStopsOwedPlaceholders proves Close ends a running grace period (no timer or
// goroutine is left; goleak checks the package) and that a run started after Close gets its
// placeholder at once, as Close stops timers.
func TestCloseStopsOwedPlaceholders(t *testing.T) {
	h := newDeliveryHarness(t)
	d := h.delivery(h.ch, func(o *Options) { o.PlaceholderAfter = time.Hour })
	h.deliver(d, started(runs.NewRunID()))
	d.Close()
	if n := len(h.ch.Sent()); n != 0 {
		t.Errorf("%d posts, want none", n)
	}
	h.deliver(d, started(runs.NewRunID()))
	if s := h.ch.Sent(); len(s) != 1 || !strings.Contains(s[0].Text, "Working") {
		t.Errorf("sent %+v after Close, want the placeholder at once", s)
	}
}

// TestResumedAttemptShowsWorkingAgain proves a run taken over after its process died (issue 14:
// kill -9, resumed about a lease later as attempt 2) shows the working signal again: typing,
// since the receipt's has long stopped showing, and the placeholder — the one the dead attempt
// posted, edited with the working card, or a new one when it posted none.
func TestResumedAttemptShowsWorkingAgain(t *testing.T) {
	t.Run("the dead attempt posted a placeholder", func(t *testing.T) {
		h := newDeliveryHarness(t)
		dead, deadTimers := h.lazyDelivery(h.ch)
		run := runReceivedAgo(12 * time.Second) // received before the crash, resumed about a lease later
		h.deliver(dead, attempt(1, "55", started(run), progress(run, "searching"))...)
		deadTimers.fire() // the placeholder is posted
		dead.Close()      // the process dies
		typing, edits := h.typingCount(), h.ch.EditCount()

		// The takeover: the receipt's typing has long expired.
		resumed, timers := h.lazyDelivery(h.ch)
		h.deliver(resumed, attempt(2, "55", started(run))...)
		if h.typingCount() <= typing {
			t.Error("the resumed attempt sent no typing signal")
		}
		if h.ch.EditCount() <= edits {
			t.Error("the resumed attempt did not show the working card in the placeholder")
		}
		if n := timers.scheduled(); n != 0 {
			t.Errorf("the resumed attempt started %d grace periods; it reuses the placeholder", n)
		}
		h.deliver(resumed, attempt(2, "55", final(run, "Found it."))...)
		if v := h.ch.Visible(); len(h.ch.Sent()) != 1 || len(v) != 1 || !strings.Contains(v[0], "Found it.") {
			t.Errorf("visible %q, want the answer in the one placeholder", v)
		}
	})
	t.Run("the dead attempt posted nothing", func(t *testing.T) {
		h := newDeliveryHarness(t)
		dead, _ := h.lazyDelivery(h.ch)
		run := runReceivedAgo(12 * time.Second)
		h.deliver(dead, attempt(1, "55", started(run))...)
		dead.Close()
		typing := h.typingCount()
		resumed, timers := h.lazyDelivery(h.ch)
		h.deliver(resumed, attempt(2, "55", started(run))...)
		if h.typingCount() <= typing {
			t.Error("the resumed attempt sent no typing signal")
		}
		if n := timers.fire(); n != 1 {
			t.Fatalf("%d grace periods ended, want the resumed attempt's", n)
		}
		if v := h.ch.Visible(); len(v) != 1 || !strings.Contains(v[0], "Working on it") {
			t.Errorf("visible %q, want the resumed attempt's placeholder", v)
		}
	})
}

// TestTypingKeptUpWhileTheRunWorks proves typing is signalled again every typingLasts while a
// run works — so the platform's indicator never lapses before the answer — and that the
// answer stops it.
func TestTypingKeptUpWhileTheRunWorks(t *testing.T) {
	h := newDeliveryHarness(t)
	d, _ := h.lazyDelivery(h.ch)
	typing := &manualTimers{}
	d.typingAfterFunc = typing.AfterFunc
	run := runs.NewRunID()
	h.deliver(d, started(run))
	before := h.typingCount()
	for i := 1; i <= 3; i++ {
		if n := typing.fire(); n != 1 {
			t.Fatalf("refresh %d: %d typing timers fired, want 1", i, n)
		}
		if n := h.typingCount(); n != before+i {
			t.Fatalf("after %d refreshes typing was signalled %d times, want %d", i, n, before+i)
		}
	}
	h.deliver(d, final(run, "Done."))
	if n := typing.scheduled(); n != 0 {
		t.Fatalf("%d typing refreshes still scheduled after the answer", n)
	}
}
