package intake

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lease holds the intakes a platform allows only once (Telegram long polling, a Discord shard, a
// Slack Socket Mode slot): one key per intake, Pintake:<name>, holding its owner's id with a
// millisecond expiry. It has the methods of the adapters' Lease (TryAcquire, Renew, Release)
// and Census (Attend, Leave, in census.go). Its methods are safe for concurrent use.
type Lease struct {
	c      redis.UniversalClient
	prefix string
}

// NewLease is the lease store under the key prefix on c.
func NewLease(c redis.UniversalClient, prefix string) Lease {
	return Lease{c: c, prefix: prefix}
}

func (l Lease) key(name string) string { return l.prefix + "intake:" + name }

// TryAcquire takes the lease name for owner for ttl unless another owner holds it; when owner
// holds it already, it is extended to ttl. ok is whether owner holds it afterwards.
func (l Lease) TryAcquire(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	n, err := acquireLease.Run(ctx, l.c, []string{l.key(name)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("intake lease %s: acquire: %w", name, err)
	}
	return n == 1, nil
}

// Renew extends the lease name to ttl from now if owner holds it; false when owner does not (it
// lapsed, or another owner took it), and then nothing changes.
func (l Lease) Renew(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	n, err := renewLease.Run(ctx, l.c, []string{l.key(name)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("intake lease %s: renew: %w", name, err)
	}
	return n == 1, nil
}

// Release gives the lease name up if owner holds it, so another owner may take it at once; a
// lease held by another owner is left alone.
func (l Lease) Release(ctx context.Context, name, owner string) error {
	if err := releaseLease.Run(ctx, l.c, []string{l.key(name)}, owner).Err(); err != nil {
		return fmt.Errorf("intake lease %s: release: %w", name, err)
	}
	return nil
}
