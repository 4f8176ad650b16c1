package intake

import (
	"context"
	"fmt"
	"time"
)

func (l Lease) censusKey(group string) string { return l.prefix + "intake:members:" + group }

// Attend counts owner among the processes sharing a set of intake leases (Discord's shards,
// Slack's socket slots) until ttl from now on Redis's clock, and returns how many owners are
// counted, owner included: one sorted set per set, Pintake:members:<group>, scored by when each
// owner's attendance lapses. Owners whose attendance lapsed are dropped; the set itself expires
// three TTLs after the last attendance.
func (l Lease) Attend(ctx context.Context, group, owner string, ttl time.Duration) (int, error) {
	n, err := attendCensus.Run(ctx, l.c, []string{l.censusKey(group)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return 0, fmt.Errorf("intake census %s: attend: %w", group, err)
	}
	return n, nil
}

// Leave takes owner out of the group's census at once (at shutdown), without waiting for its
// attendance to lapse.
func (l Lease) Leave(ctx context.Context, group, owner string) error {
	if err := l.c.ZRem(ctx, l.censusKey(group), owner).Err(); err != nil {
		return fmt.Errorf("intake census %s: leave: %w", group, err)
	}
	return nil
}
