package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
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
