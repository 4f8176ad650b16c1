package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// TestInboxConfirmsUpdatesBeforeTheirHandOver: with an Inbox, a batch is confirmed to Telegram
// (no longer pending there) once kept, while the Handler still holds its hand-over; the
// updates are then handed over in order, and Done saves the offset past them.
func TestInboxConfirmsUpdatesBeforeTheirHandOver(t *testing.T) {
	fake := telegramfake.New(t)
	inbox := &MemoryInbox{}
	release := make(chan struct{})
	rec := &recorder{fail: func(channels.Inbound) error { <-release; return nil }}
	for i := range 5 {
		fake.PushPrivate(telegramfake.User{ID: 42}, "hello "+string(rune('a'+i)))
	}
	startWith(t, fake, func(c *Config) { c.Inbox = inbox }, rec)
	eventually(t, "the batch confirmed while its hand-over waits", func() bool { return fake.Pending() == 0 })
	if n := len(rec.got()); n != 0 {
		t.Fatalf("%d updates handed over while the Handler was held", n)
	}
	close(release)
	eventually(t, "the five updates handed over", func() bool { return len(rec.got()) == 5 })
	for i, in := range rec.got() {
		if want := "hello " + string(rune('a'+i)); in.Text != want {
			t.Fatalf("update %d = %q, want %q: kept order", i, in.Text, want)
		}
	}
	eventually(t, "the batch done and its offset saved", func() bool {
		p, _ := inbox.Pending(context.Background())
		return len(p) == 0 && inbox.Offset() > 0
	})
}

// TestInboxRetriesARefusalWithoutFetchingAgain: an update the Handler refuses is handed over
// again from the Inbox (Telegram is not asked for it again), and no update is handed over twice.
func TestInboxRetriesARefusalWithoutFetchingAgain(t *testing.T) {
	fake := telegramfake.New(t)
	inbox := &MemoryInbox{}
	var refusals atomic.Int32
	rec := &recorder{fail: func(in channels.Inbound) error {
		if in.Text == "second" && refusals.Add(1) <= 2 {
			return errors.New("store unreachable")
		}
		return nil
	}}
	fake.PushPrivate(telegramfake.User{ID: 42}, "first")
	fake.PushPrivate(telegramfake.User{ID: 42}, "second")
	fake.PushPrivate(telegramfake.User{ID: 43}, "other chat")
	startWith(t, fake, func(c *Config) { c.Inbox = inbox }, rec)
	eventually(t, "all three handed over", func() bool { return len(rec.got()) == 3 })
	counts := map[string]int{}
	for _, in := range rec.got() {
		counts[in.Text]++
	}
	if counts["first"] != 1 || counts["second"] != 1 || counts["other chat"] != 1 {
		t.Fatalf("handed over %v, want each once", counts)
	}
	if n := refusals.Load(); n < 3 {
		t.Fatalf("the refused update was tried %d times, want 3", n)
	}
	// The poll after the batch was kept confirms it (it may still be on its way).
	eventually(t, "the batch confirmed to Telegram", func() bool { return fake.Pending() == 0 })
}

// TestInboxHandsOverWhatAnEarlierPollerKept: a batch kept by a poller that died before handing
// it over is handed over first by the next one, which then polls past it.
func TestInboxHandsOverWhatAnEarlierPollerKept(t *testing.T) {
	fake := telegramfake.New(t)
	inbox := &MemoryInbox{}
	left := json.RawMessage(`{"update_id":500,"message":{"message_id":9,"date":1,"chat":{"id":42,"type":"private"},"from":{"id":42,"first_name":"A"},"text":"kept"}}`)
	if _, err := inbox.Append(context.Background(), 500, 501, []json.RawMessage{left}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	h := startWith(t, fake, func(c *Config) { c.Inbox = inbox }, rec)
	eventually(t, "the kept update handed over", func() bool { return len(rec.got()) == 1 })
	if got := rec.got()[0].Text; got != "kept" {
		t.Fatalf("handed over %q, want the kept update", got)
	}
	h.fake.PushPrivate(telegramfake.User{ID: 42}, "new")
	eventually(t, "the new update handed over", func() bool { return len(rec.got()) == 2 })
	eventually(t, "the offset past both", func() bool { return inbox.Offset() > 501 })
}
