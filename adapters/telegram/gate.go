package telegram

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// errHeldBack refuses an update that would overtake a failed, not yet redelivered, earlier update
// of its conversation.
var errHeldBack = errors.New("telegram: held back behind a failed update of the same conversation")

// holdBack is how long a conversation's failed webhook update holds back its later updates while
// waiting for Telegram to redeliver it. It is bounded so that an update Telegram gave up on does
// not block its conversation for good.
const holdBack = time.Minute

// convGate keeps the webhook's concurrent deliveries in order per conversation: one hand-over at a
// time per conversation, the waiting update with the smallest id next, while different
// conversations go through at once. After a Handler error, the conversation's later updates are
// refused (Telegram redelivers them) until the failed update is handed over or holdBack passes.
type convGate struct {
	mu    sync.Mutex
	turns map[convOrder]*convTurn
	calls int
}

type convTurn struct {
	busy     bool
	waiters  []*gateWaiter // sorted by update id
	failedID int64         // the earliest failed update not handed over since; 0 when none
	failedAt time.Time
}

type gateWaiter struct {
	id    int64
	ready chan struct{} // closed when the turn is handed to this waiter
}

func newConvGate() *convGate { return &convGate{turns: map[convOrder]*convTurn{}} }

// enter waits for the conversation's turn for update id. On nil error the caller holds the turn
// and must call leave exactly once. It fails with errHeldBack when an earlier update of the
// conversation failed within holdBack, and with ctx's error when ctx ends first.
func (g *convGate) enter(ctx context.Context, k convOrder, id int64, now func() time.Time) error {
	g.mu.Lock()
	if g.calls++; g.calls%1024 == 0 {
		g.pruneLocked(now())
	}
	t := g.turns[k]
	if t == nil {
		t = &convTurn{}
		g.turns[k] = t
	}
	if !t.busy {
		t.busy = true
		if err := t.heldBack(id, now()); err != nil {
			g.passLocked(k, t)
			g.mu.Unlock()
			return err
		}
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{id: id, ready: make(chan struct{})}
	at, _ := slices.BinarySearchFunc(t.waiters, id, func(w *gateWaiter, id int64) int { return cmp.Compare(w.id, id) })
	t.waiters = slices.Insert(t.waiters, at, w)
	g.mu.Unlock()

	select {
	case <-w.ready:
	case <-ctx.Done():
		g.mu.Lock()
		select {
		case <-w.ready: // handed the turn just now: pass it on
			g.passLocked(k, t)
		default:
			t.waiters = slices.DeleteFunc(t.waiters, func(o *gateWaiter) bool { return o == w })
		}
		g.mu.Unlock()
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := t.heldBack(id, now()); err != nil {
		g.passLocked(k, t)
		return err
	}
	return nil
}

// leave ends the turn of update id: handed reports whether the Handler took it.
func (g *convGate) leave(k convOrder, id int64, handed bool, now func() time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.turns[k]
	switch {
	case !handed && (t.failedID == 0 || id < t.failedID):
		t.failedID, t.failedAt = id, now()
	case handed && t.failedID != 0 && id >= t.failedID:
		t.failedID = 0
	}
	g.passLocked(k, t)
}

// heldBack refuses id while an earlier update of the conversation is failed and recent.
func (t *convTurn) heldBack(id int64, now time.Time) error {
	if t.failedID != 0 && now.Sub(t.failedAt) >= holdBack {
		t.failedID = 0
	}
	if t.failedID != 0 && id > t.failedID {
		return errHeldBack
	}
	return nil
}

// passLocked hands the turn to the waiter with the smallest update id, or frees it (and forgets
// the conversation when nothing is left to remember).
func (g *convGate) passLocked(k convOrder, t *convTurn) {
	if len(t.waiters) > 0 {
		w := t.waiters[0]
		t.waiters = t.waiters[1:]
		close(w.ready)
		return
	}
	t.busy = false
	if t.failedID == 0 {
		delete(g.turns, k)
	}
}

// pruneLocked forgets idle conversations whose failure is older than holdBack.
func (g *convGate) pruneLocked(now time.Time) {
	for k, t := range g.turns {
		if !t.busy && now.Sub(t.failedAt) >= holdBack {
			delete(g.turns, k)
		}
	}
}
