package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Inbox keeps fetched batches of updates durable between their fetch and their hand-over, so
// that a batch is confirmed to Telegram (by the next getUpdates, which deletes it there) after one
// write, not after the Handler took every update of it: intake is never bound by routing. The
// wiring backs it with Redis; MemoryInbox serves tests.
type Inbox interface {
	// Append keeps a batch fetched at offset from: raws are its updates in order, next the
	// offset past it. It returns the batch's id.
	Append(ctx context.Context, from, next int64, raws []json.RawMessage) (string, error)
	// Done forgets batch id once all its updates were handed over; next is the offset past it,
	// which the implementation saves (as an OffsetStore does) before it forgets the batch.
	Done(ctx context.Context, id string, next int64) error
	// Pending returns the batches kept and not done, oldest first.
	Pending(ctx context.Context) ([]InboxBatch, error)
}

// InboxBatch is a kept batch.
type InboxBatch struct {
	ID      string
	From    int64
	Next    int64
	Updates []json.RawMessage
}

// inboxQueue bounds the batches kept and waiting for their hand-over in memory: past it the
// poller waits (6,400 updates at Telegram's 100 a batch).
const inboxQueue = 64

// intake is the poll loop's side of an Inbox: take keeps a batch and queues it, and one
// goroutine hands the queued batches over in order, each like handleBatch does without an
// Inbox, retrying what the Handler refused until it is taken or the poll loop ends.
type intake struct {
	p     *poller
	queue chan InboxBatch
	done  chan struct{}
}

func (p *poller) startIntake(ctx context.Context) *intake {
	in := &intake{p: p, queue: make(chan InboxBatch, inboxQueue), done: make(chan struct{})}
	go in.handOver(ctx)
	return in
}

// stop ends the hand-over (its ctx has ended: the poll loop is done) and waits for it; the
// batches not handed over stay in the Inbox for the next poller.
func (in *intake) stop() {
	close(in.queue)
	<-in.done
}

// resume queues what the Inbox kept from earlier pollers, and returns the offset to poll from:
// past the last kept batch. ok is false when ctx ended first.
func (in *intake) resume(ctx context.Context, offset int64) (int64, bool) {
	p := in.p
	for n := 1; ; n++ {
		kept, err := p.cfg.Inbox.Pending(ctx)
		if err == nil {
			if len(kept) > 0 {
				p.cfg.Logger.Info("telegram: handing over the updates an earlier poller kept", "batches", len(kept))
			}
			for _, b := range kept {
				if !in.enqueue(ctx, b) {
					return 0, false
				}
				offset = max(offset, b.Next)
			}
			return offset, true
		}
		if ctx.Err() != nil {
			return 0, false
		}
		if n == 1 {
			p.cfg.Logger.Warn("telegram: reading the kept updates failed; retrying before polling", "err", err)
		}
		if p.clock.Sleep(ctx, backoff(n)) != nil {
			return 0, false
		}
	}
}

func (in *intake) enqueue(ctx context.Context, b InboxBatch) bool {
	select {
	case in.queue <- b:
		return true
	case <-ctx.Done():
		return false
	}
}

// take keeps the batch fetched at offset in the Inbox and queues it for its hand-over; it returns
// the offset past it (the next poll confirms it), or offset and the error when it could not be
// kept — then nothing moves, and the next poll fetches the batch again.
func (in *intake) take(ctx context.Context, batch []entry, offset int64) (int64, error) {
	if len(batch) == 0 {
		return offset, nil
	}
	next := batchEnd(batch, offset)
	raws := make([]json.RawMessage, len(batch))
	for i, e := range batch {
		raws[i] = e.raw
	}
	id, err := in.p.cfg.Inbox.Append(ctx, offset, next, raws)
	if err != nil {
		return offset, fmt.Errorf("telegram: keeping the updates: %w", err)
	}
	// Kept: should ctx end before it is queued, the next poller hands it over.
	in.enqueue(ctx, InboxBatch{ID: id, From: offset, Next: next, Updates: raws})
	return next, nil
}

// batchEnd reads the batch's ids (and the floors of unreadable ones, see floorIDs) and returns
// the offset past it, as handleBatch does for a batch handed over whole.
func batchEnd(batch []entry, offset int64) int64 {
	for i := range batch {
		batch[i].id = readUpdateID(batch[i].raw)
	}
	floorIDs(batch, offset)
	last := offset - 1
	for _, e := range batch {
		if id := max(e.id, e.floor); id > 0 {
			last = max(last, id)
		}
	}
	return max(offset, last+1)
}

// handOver hands the queued batches over in order until the queue closes. A batch the Handler
// refused in part is tried again from its earliest refused update, after a backoff (100 ms
// doubling up to refusalMaxWait), while the poll loop's ctx lasts; once taken it is Done.
func (in *intake) handOver(ctx context.Context) {
	defer close(in.done)
	p := in.p
	for b := range in.queue {
		if ctx.Err() != nil {
			continue // kept: the next poller hands it over
		}
		entries := make([]entry, len(b.Updates))
		for i, raw := range b.Updates {
			entries[i].raw = raw
		}
		offset, taken := b.From, false
		for n := 1; ctx.Err() == nil; n++ {
			next, err := p.dispatcher.handleBatch(ctx, entries, offset)
			if err == nil {
				taken = true
				break
			}
			offset = next
			if n == 1 || n%10 == 0 {
				p.cfg.Logger.Warn("telegram: handing kept updates over failed; retrying", "err", err, "attempts", n)
			}
			if p.clock.Sleep(ctx, min(backoff(n), refusalMaxWait)) != nil {
				break
			}
		}
		if !taken {
			continue
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err := p.cfg.Inbox.Done(dctx, b.ID, b.Next); err != nil {
			// The batch stays kept: a later poller hands it over again, and the router's dedupe
			// ignores what was taken.
			p.cfg.Logger.Warn("telegram: forgetting a handed-over batch failed; a later poller may hand it over again", "err", err)
		}
		cancel()
	}
}

// MemoryInbox is an Inbox in memory, for tests and single-run processes; Offset is what Done
// saved. The zero value is ready to use.
type MemoryInbox struct {
	mu      sync.Mutex
	batches []InboxBatch
	seq     int
	offset  int64
}

// Append keeps the batch.
func (m *MemoryInbox) Append(_ context.Context, from, next int64, raws []json.RawMessage) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	id := strconv.Itoa(m.seq)
	m.batches = append(m.batches, InboxBatch{ID: id, From: from, Next: next, Updates: raws})
	return id, nil
}

// Done forgets the batch and saves next.
func (m *MemoryInbox) Done(_ context.Context, id string, next int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offset = max(m.offset, next)
	m.batches = slices.DeleteFunc(m.batches, func(b InboxBatch) bool { return b.ID == id })
	return nil
}

// Pending returns the kept batches.
func (m *MemoryInbox) Pending(context.Context) ([]InboxBatch, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.batches), nil
}

// Offset is the largest offset Done saved.
func (m *MemoryInbox) Offset() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offset
}
