package telegram

import (
	"context"
	"sync"
	"sync/atomic"
)

// maxHandovers bounds how many conversations of one getUpdates batch are handed to the Handler
// at once.
const maxHandovers = 64

// convOrder names the sequence an update must keep its place in: its conversation (chat, and
// forum topic). Updates that belong to no conversation (kinds the bot ignores, callbacks without a
// message) get a sequence of their own, keyed by update id.
type convOrder struct {
	chat   int64
	thread int
	solo   int64
}

// orderOf is the conversation sequence of u; it matches the Inbound's ConvKey.
func orderOf(u update) convOrder {
	var m *message
	switch {
	case u.Message != nil:
		m = u.Message
	case u.CallbackQuery != nil && u.CallbackQuery.Message != nil:
		m = u.CallbackQuery.Message
	}
	if m == nil || m.Chat == nil {
		return convOrder{solo: u.UpdateID}
	}
	k := convOrder{chat: m.Chat.ID}
	if m.IsTopicMessage && m.MessageThreadID != 0 { // as convKey: only a forum topic is its own conversation
		k.thread = m.MessageThreadID
	}
	return k
}

// batchItem is one update of a batch and what became of it.
type batchItem struct {
	id  int64
	u   update
	ok  bool  // handed over, already handed over, malformed or ignored: the offset may pass it
	err error // the Handler's refusal, or why it was not handed over
}

// handleBatch hands the batch's updates at or above offset to the Handler: conversations
// concurrently (at most maxHandovers at once), each conversation's updates strictly in update
// order. A Handler error stops its conversation there — its later updates in the batch are not
// handed over — while other conversations go on; ctx ending stops every conversation before its
// next update. Malformed updates are logged, counted and skipped: one whose id cannot be read
// counts as the least id its place in the batch allows (floorIDs). It sets the entries' ids and
// floors. It returns when every
// hand-over it started has returned, with the offset to save: the id of the earliest update not
// handed over, or past the batch when all were; and the error of that earliest update. Updates
// at or above the returned offset that were handed over anyway come back on the next poll and
// are skipped as already seen (the router dedupes them too).
func (d *dispatcher) handleBatch(ctx context.Context, batch []entry, offset int64) (int64, error) {
	items := make([]batchItem, len(batch))
	malformed := make([]error, len(batch))
	for i := range batch {
		e := &batch[i]
		u, err := decodeUpdate(e.raw)
		if err != nil {
			e.id, malformed[i] = readUpdateID(e.raw), err
			continue
		}
		e.id, items[i] = u.UpdateID, batchItem{id: u.UpdateID, u: u}
	}
	floorIDs(batch, offset)
	groups := make(map[convOrder][]int, len(batch))
	var order []convOrder
	for i, e := range batch {
		if malformed[i] != nil {
			d.skipMalformed(e.id, e.floor, len(e.raw), malformed[i])
			items[i] = batchItem{id: max(e.id, e.floor), ok: true}
			continue
		}
		u := items[i].u
		if u.UpdateID < offset {
			items[i].ok = true // already handed over (Telegram resent it before our confirmation)
			continue
		}
		k := orderOf(u)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}

	run := func(k convOrder) {
		for _, i := range groups[k] {
			it := &items[i]
			if err := ctx.Err(); err != nil {
				it.err = err
				return
			}
			if it.err = d.dispatch(ctx, it.u); it.err != nil {
				return
			}
			it.ok = true
		}
	}
	if len(order) == 1 {
		run(order[0])
	} else if len(order) > 1 {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range min(maxHandovers, len(order)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := next.Add(1) - 1; j < int64(len(order)); j = next.Add(1) - 1 {
					run(order[j])
				}
			}()
		}
		wg.Wait()
	}

	return nextOffset(items, offset)
}

// nextOffset is the offset to save after a batch's items were handed over from offset: the id
// of the earliest item not handed over, with the error of the first that failed; or past the
// batch when all were. Telegram sends a batch in update order, but the offset must not pass a
// pending update whatever the order, so it takes the smallest.
func nextOffset(items []batchItem, offset int64) (int64, error) {
	var held *batchItem
	var err error
	last := offset - 1
	for i := range items {
		it := &items[i]
		if !it.ok && (held == nil || it.id < held.id) {
			held = it
		}
		if err == nil {
			err = it.err
		}
		if it.id > 0 { // 0: an unreadable id with no floor, which moves nothing
			last = max(last, it.id)
		}
	}
	if held != nil {
		return max(offset, held.id), err
	}
	return last + 1, nil
}

// skipMalformed logs and counts an update that cannot be handed over: id is its update_id, or
// 0 when unreadable (then floor, when known, is the least it can be). An update with a readable
// id is reported once however often it is fetched. Neither the update's content nor the token
// is logged.
func (d *dispatcher) skipMalformed(id, floor int64, size int, err error) {
	attrs := []any{"bytes", size, "err", d.redact.Error(err)}
	switch {
	case id > 0:
		if d.seen.has(id) {
			return
		}
		d.seen.add(id)
		attrs = append(attrs, "update_id", id)
	case floor > 0:
		attrs = append(attrs, "update_id_at_least", floor)
	}
	d.cfg.Logger.Warn("telegram: skipping a malformed update", attrs...)
	if d.cfg.OnMalformedUpdate != nil {
		d.cfg.OnMalformedUpdate()
	}
}
