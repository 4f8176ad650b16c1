package intake

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Inbox keeps the Telegram batches fetched and not yet handed over in a Redis stream,
// Ptelegram:inbox:<bot id>, one entry per batch (its offsets and its updates as one JSON array),
// so that polling confirms a batch after one XADD and a poller that died before handing it over
// leaves it to the next. Done saves the batch's end through the bot's Offsets before it deletes
// the entry: the kept batches and the offset together always cover every update Telegram was
// told was received. Its methods are safe for concurrent use.
type Inbox struct {
	c       redis.UniversalClient
	key     string
	offsets Offsets
	log     *slog.Logger
}

// InboxBatch is a kept batch: the updates fetched at offset From, in order, and Next, the offset
// past them. ID names it for Done.
type InboxBatch struct {
	ID      string
	From    int64
	Next    int64
	Updates []json.RawMessage
}

// NewInbox is the inbox of the bot botID (the token's public part, never the token) under the
// key prefix on c, saving offsets to NewOffsets(c, prefix, botID). log is told of entries under
// the key that are not batches (nil: slog.Default()).
func NewInbox(c redis.UniversalClient, prefix, botID string, log *slog.Logger) Inbox {
	if log == nil {
		log = slog.Default()
	}
	return Inbox{c: c, key: prefix + "telegram:inbox:" + botID, offsets: NewOffsets(c, prefix, botID), log: log}
}

// Append keeps a batch fetched at offset from: raws are its updates in order, each a JSON value,
// and next the offset past them. It returns the batch's id.
func (in Inbox) Append(ctx context.Context, from, next int64, raws []json.RawMessage) (string, error) {
	n := 2
	for _, r := range raws {
		n += len(r) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '[')
	for i, r := range raws {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, r...)
	}
	buf = append(buf, ']')
	id, err := in.c.XAdd(ctx, &redis.XAddArgs{Stream: in.key, Values: []any{"from", from, "next", next, "updates", buf}}).Result()
	if err != nil {
		return "", fmt.Errorf("telegram inbox: %w", err)
	}
	return id, nil
}

// Done forgets batch id once all its updates were handed over, after saving next (the offset
// past it) as Offsets.SaveOffset does. When the save fails the batch is kept.
func (in Inbox) Done(ctx context.Context, id string, next int64) error {
	if err := in.offsets.SaveOffset(ctx, next); err != nil {
		return err
	}
	if err := in.c.XDel(ctx, in.key, id).Err(); err != nil {
		return fmt.Errorf("telegram inbox: %w", err)
	}
	return nil
}

// Pending returns the batches kept and not done, oldest first. An entry that is not a batch
// (written by something else under the key) is logged and skipped: it stays for an operator.
func (in Inbox) Pending(ctx context.Context) ([]InboxBatch, error) {
	msgs, err := in.c.XRange(ctx, in.key, "-", "+").Result()
	if err != nil {
		return nil, fmt.Errorf("telegram inbox: %w", err)
	}
	out := make([]InboxBatch, 0, len(msgs))
	for _, m := range msgs {
		b, err := decodeInboxEntry(m.ID, m.Values)
		if err != nil {
			// Not a batch this bot wrote: it cannot be handed over, and it stays for an operator
			// to look at (XRANGE) rather than block polling.
			in.log.Error("telegram: skipping an unreadable entry of the kept updates", "key", in.key, "err", err)
			continue
		}
		out = append(out, b)
	}
	return out, nil
}

// decodeInboxEntry reads one stream entry of the inbox; an entry that is not one (written by
// something else under the key) is an error naming it.
func decodeInboxEntry(id string, values map[string]any) (InboxBatch, error) {
	b := InboxBatch{ID: id}
	num := func(name string) (int64, error) {
		s, _ := values[name].(string)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("telegram inbox: entry %s: %s %q is not an offset", id, name, s)
		}
		return n, nil
	}
	var err error
	if b.From, err = num("from"); err != nil {
		return b, err
	}
	if b.Next, err = num("next"); err != nil {
		return b, err
	}
	s, _ := values["updates"].(string)
	if err := json.Unmarshal([]byte(s), &b.Updates); err != nil {
		return b, fmt.Errorf("telegram inbox: entry %s: the updates are not a JSON array", id)
	}
	return b, nil
}
