package telegram

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// orderHandler records every hand-over (refused ones included) per conversation, fails when two
// hand-overs of one conversation overlap, and runs hook (which may block or refuse) first.
type orderHandler struct {
	t    *testing.T
	hook func(in channels.Inbound) error

	mu       sync.Mutex
	inFlight map[conv.Key]int
	calls    map[conv.Key][]string // conversation → texts in hand-over order
	accepted map[string]int        // text → times accepted
}

func newOrderHandler(t *testing.T, hook func(channels.Inbound) error) *orderHandler {
	return &orderHandler{t: t, hook: hook, inFlight: map[conv.Key]int{}, calls: map[conv.Key][]string{}, accepted: map[string]int{}}
}

func (h *orderHandler) HandleInbound(_ context.Context, _ channels.Channel, in channels.Inbound) error {
	conv := in.Conv
	h.mu.Lock()
	h.inFlight[conv]++
	if h.inFlight[conv] > 1 {
		h.t.Errorf("two hand-overs of %s at once (%q)", conv, in.Text)
	}
	h.calls[conv] = append(h.calls[conv], in.Text)
	h.mu.Unlock()
	var err error
	if h.hook != nil {
		err = h.hook(in)
	}
	h.mu.Lock()
	h.inFlight[conv]--
	if err == nil {
		h.accepted[in.Text]++
	}
	h.mu.Unlock()
	return err
}

func (h *orderHandler) timesAccepted(text string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.accepted[text]
}

func (h *orderHandler) order(conv conv.Key) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls[conv])
}

// waitClosed waits for ch to close, failing the test (not hanging it) after 5 s.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Errorf("timed out waiting for %s: conversations were not handed over concurrently", what)
	}
}

var bob = telegramfake.User{ID: 7, FirstName: "Bob"}

func TestBatchHandledConcurrentlyAcrossChatsInOrderWithinChat(t *testing.T) {
	type msg struct {
		push func(f *telegramfake.Server, text string) int64
		conv conv.Key
	}
	private := func(u telegramfake.User) msg {
		return msg{func(f *telegramfake.Server, text string) int64 { id, _ := f.PushPrivate(u, text); return id }, privateConv(u.ID)}
	}
	topic := func(thread int) msg {
		return msg{func(f *telegramfake.Server, text string) int64 {
			id, _ := f.PushTopic(-100500, thread, ann, text)
			return id
		},
			conv.Key{Platform: platform, Chat: "-100500", Thread: strconv.Itoa(thread)}}
	}
	tests := []struct {
		name string
		a, b msg
	}{
		{"private chats", private(ann), private(bob)},
		{"forum topics of one group", topic(11), topic(12)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := telegramfake.New(t)
			// One batch: a1 a2 b1 a3 b2. a1 is held until both of b's updates were handed over,
			// which only a concurrent hand-over lets happen.
			var last int64
			for _, p := range []struct {
				m    msg
				text string
			}{{tt.a, "a1"}, {tt.a, "a2"}, {tt.b, "b1"}, {tt.a, "a3"}, {tt.b, "b2"}} {
				last = p.m.push(fake, p.text)
			}
			bDone := make(chan struct{})
			h := newOrderHandler(t, func(in channels.Inbound) error {
				switch in.Text {
				case "a1":
					waitClosed(t, bDone, "chat b while chat a's first update is held")
				case "b2":
					close(bDone)
				}
				return nil
			})
			store := &MemoryOffsets{}
			ch, _ := newChannel(t, fake, func(c *Config) { c.Offsets = store })
			if err := ch.Start(context.Background(), h); err != nil {
				t.Fatal(err)
			}
			defer ch.Stop(context.Background())
			eventually(t, "every update confirmed", func() bool {
				off, _ := store.LoadOffset(context.Background())
				return off == last+1 && fake.Pending() == 0
			})
			if got := h.order(tt.a.conv); !slices.Equal(got, []string{"a1", "a2", "a3"}) {
				t.Errorf("conversation a handed over %q, want a1 a2 a3", got)
			}
			if got := h.order(tt.b.conv); !slices.Equal(got, []string{"b1", "b2"}) {
				t.Errorf("conversation b handed over %q, want b1 b2", got)
			}
		})
	}
}

// offsetWatch is an OffsetStore that checks every save against the updates still refused.
type offsetWatch struct {
	MemoryOffsets
	t *testing.T
	// pending reports the ids of failing updates not yet accepted.
	pending func() []int64
	mu      sync.Mutex
	saves   []int64
}

func (o *offsetWatch) SaveOffset(ctx context.Context, offset int64) error {
	for _, id := range o.pending() {
		if offset > id {
			o.t.Errorf("offset %d saved while update %d was not handed over", offset, id)
		}
	}
	o.mu.Lock()
	o.saves = append(o.saves, offset)
	o.mu.Unlock()
	return o.MemoryOffsets.SaveOffset(ctx, offset)
}

func TestFailedUpdateHoldsBackItsChatAndTheOffset(t *testing.T) {
	tests := []struct {
		name    string
		failing []string // refused twice each, then accepted
		// firstSave is the update whose id is the offset saved after the first batch: the
		// earliest refused one.
		firstSave string
	}{
		{"one chat refused", []string{"a2"}, "a2"},
		{"two chats refused: the earliest holds the offset", []string{"b2", "a2"}, "a2"},
		{"the first update refused", []string{"a1"}, "a1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := telegramfake.New(t)
			ids := map[string]int64{}
			for _, p := range []struct {
				u    telegramfake.User
				text string
			}{{ann, "a1"}, {bob, "b1"}, {ann, "a2"}, {bob, "b2"}, {ann, "a3"}} {
				ids[p.text], _ = fake.PushPrivate(p.u, p.text)
			}
			var mu sync.Mutex
			refusals := map[string]int{}
			h := newOrderHandler(t, func(in channels.Inbound) error {
				if !slices.Contains(tt.failing, in.Text) {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				if refusals[in.Text]++; refusals[in.Text] <= 2 {
					return errors.New("queue unavailable")
				}
				return nil
			})
			store := &offsetWatch{t: t, pending: func() []int64 {
				var out []int64
				for _, text := range tt.failing {
					if h.timesAccepted(text) == 0 {
						out = append(out, ids[text])
					}
				}
				return out
			}}
			ch, _ := newChannel(t, fake, func(c *Config) { c.Offsets = store })
			if err := ch.Start(context.Background(), h); err != nil {
				t.Fatal(err)
			}
			defer ch.Stop(context.Background())
			eventually(t, "every update confirmed", func() bool {
				off, _ := store.LoadOffset(context.Background())
				return off == ids["a3"]+1
			})
			wantA := []string{"a1", "a2", "a3"}
			wantB := []string{"b1", "b2"}
			for _, text := range tt.failing {
				// Each refused update is tried three times, and nothing later in its chat before
				// it is accepted.
				if text[0] == 'a' {
					i := slices.Index(wantA, text)
					wantA = slices.Insert(wantA, i, text, text)
				} else {
					i := slices.Index(wantB, text)
					wantB = slices.Insert(wantB, i, text, text)
				}
			}
			if got := h.order(privateConv(ann.ID)); !slices.Equal(got, wantA) {
				t.Errorf("chat a handed over %q, want %q", got, wantA)
			}
			if got := h.order(privateConv(bob.ID)); !slices.Equal(got, wantB) {
				t.Errorf("chat b handed over %q, want %q", got, wantB)
			}
			for text := range ids {
				if n := h.timesAccepted(text); n != 1 {
					t.Errorf("%s accepted %d times, want once", text, n)
				}
			}
			store.mu.Lock()
			defer store.mu.Unlock()
			if len(store.saves) == 0 || store.saves[0] != ids[tt.firstSave] {
				t.Errorf("offsets saved %v, want the first at %d (%s)", store.saves, ids[tt.firstSave], tt.firstSave)
			}
		})
	}
}
