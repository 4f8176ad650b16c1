package threads

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Expiry is a clarification due to be expired: an approval whose time ran out resumes its run
// as denied.
type Expiry struct {
	ID      string
	ConvKey string
}

// dueExpiriesScript hands each due entry of the expiry index to exactly one caller.
// KEYS[1] the index (zset, score = unix ms). ARGV: now (unix ms), limit.
// Returns the members taken.
var dueExpiriesScript = redis.NewScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #due > 0 then redis.call('ZREM', KEYS[1], unpack(due)) end
return due
`)

// ScheduleExpiry indexes the clarification id of conversation convKey to be expired at at.
// Scheduling it again moves it.
func (s *Store) ScheduleExpiry(ctx context.Context, id, convKey string, at time.Time) error {
	if strings.Contains(id, "\n") {
		return fmt.Errorf("threads: schedule expiry %q: %w", id, invalid("an id with a newline"))
	}
	if err := s.r.c.ZAdd(ctx, s.keys.expiries(), redis.Z{Score: float64(at.UnixMilli()), Member: id + "\n" + convKey}).Err(); err != nil {
		return fmt.Errorf("threads: schedule expiry %q: %w", id, err)
	}
	return nil
}

// DueExpiries takes up to limit entries due at now from the index, atomically: each is returned
// to one caller only, whichever process asks first.
func (s *Store) DueExpiries(ctx context.Context, now time.Time, limit int) ([]Expiry, error) {
	v, err := dueExpiriesScript.Run(ctx, s.r.c, []string{s.keys.expiries()}, strconv.FormatInt(now.UnixMilli(), 10), limit).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("threads: due expiries: %w", err)
	}
	out := make([]Expiry, 0, len(v))
	for _, m := range v {
		id, conv, ok := strings.Cut(m, "\n")
		if !ok {
			continue
		}
		out = append(out, Expiry{ID: id, ConvKey: conv})
	}
	return out, nil
}
