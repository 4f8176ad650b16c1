package intake

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Offsets keeps a Telegram bot's next update id in Redis, Ptelegram:offset:<bot id>, so a
// restarted process (or another one taking over polling) neither replays nor skips updates.
// Saves only move it forward. It is the Telegram adapter's OffsetStore; its methods are safe for
// concurrent use.
type Offsets struct {
	c   redis.UniversalClient
	key string
}

// NewOffsets is the offset of the bot botID (the token's public part, never the token) under
// the key prefix on c.
func NewOffsets(c redis.UniversalClient, prefix, botID string) Offsets {
	return Offsets{c: c, key: prefix + "telegram:offset:" + botID}
}

// LoadOffset returns the saved offset, or 0 when none was saved.
func (o Offsets) LoadOffset(ctx context.Context) (int64, error) {
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

// SaveOffset records n unless a larger offset was saved already (by this process or another):
// the offset never moves back.
func (o Offsets) SaveOffset(ctx context.Context, n int64) error {
	if err := saveForward.Run(ctx, o.c, []string{o.key}, n).Err(); err != nil {
		return fmt.Errorf("telegram offset: %w", err)
	}
	return nil
}
