package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/switchboard-bot/switchboard/adapters/telegram"
)

// redisOffsets keeps a Telegram bot's next update id in Redis, so a restarted process (or
// another one taking over polling) neither replays nor skips updates. Saves only move forward.
type redisOffsets struct {
	c   redis.UniversalClient
	key string
}

// saveForward sets the key to ARGV[1] unless it already holds a larger value.
var saveForward = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local v = tonumber(ARGV[1])
if v > cur then redis.call('SET', KEYS[1], ARGV[1]) end
return 1`)

func (o redisOffsets) LoadOffset(ctx context.Context) (int64, error) {
	s, err := o.c.Get(ctx, o.key).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("telegram offset: %w", err)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("telegram offset: stored value %q is not a number", s)
	}
	return n, nil
}

func (o redisOffsets) SaveOffset(ctx context.Context, n int64) error {
	if err := saveForward.Run(ctx, o.c, []string{o.key}, n).Err(); err != nil {
		return fmt.Errorf("telegram offset: %w", err)
	}
	return nil
}

// redisInbox keeps the Telegram batches fetched and not yet handed over in a Redis stream, one
// entry per batch (its offsets and its updates as one JSON array), so that polling confirms a
// batch after one XADD and a poller that died before handing it over leaves it to the next.
// Done saves the batch's end through offsets before it deletes the entry: the kept batches and
// the offset together always cover every update Telegram was told was received.
type redisInbox struct {
	c       redis.UniversalClient
	key     string
	offsets redisOffsets
	log     *slog.Logger
}

func (in redisInbox) Append(ctx context.Context, from, next int64, raws []json.RawMessage) (string, error) {
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

func (in redisInbox) Done(ctx context.Context, id string, next int64) error {
	if err := in.offsets.SaveOffset(ctx, next); err != nil {
		return err
	}
	if err := in.c.XDel(ctx, in.key, id).Err(); err != nil {
		return fmt.Errorf("telegram inbox: %w", err)
	}
	return nil
}

func (in redisInbox) Pending(ctx context.Context) ([]telegram.InboxBatch, error) {
	msgs, err := in.c.XRange(ctx, in.key, "-", "+").Result()
	if err != nil {
		return nil, fmt.Errorf("telegram inbox: %w", err)
	}
	out := make([]telegram.InboxBatch, 0, len(msgs))
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
func decodeInboxEntry(id string, values map[string]any) (telegram.InboxBatch, error) {
	b := telegram.InboxBatch{ID: id}
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
