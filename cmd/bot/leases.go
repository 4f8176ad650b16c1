package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisLease is the channels.Lease of intakes a platform allows only once (Telegram long
// polling): one key per intake, `<redis.prefix>intake:<name>`, holding the owner's id with a
// millisecond expiry. Every command touches one key, so it works on Redis Cluster and on the
// embedded store alike.
type redisLease struct {
	c      redis.UniversalClient
	prefix string
}

// acquireLease sets KEYS[1] to ARGV[1] for ARGV[2] ms unless another owner holds it, extending
// it when ARGV[1] already does; 1 when ARGV[1] holds it afterwards.
var acquireLease = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if cur then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`)

// renewLease extends KEYS[1] to ARGV[2] ms if ARGV[1] holds it; 1 when it did.
var renewLease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`)

// releaseLease deletes KEYS[1] if ARGV[1] holds it.
var releaseLease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

func (l redisLease) key(name string) string { return l.prefix + "intake:" + name }

func (l redisLease) TryAcquire(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	n, err := acquireLease.Run(ctx, l.c, []string{l.key(name)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("intake lease %s: acquire: %w", name, err)
	}
	return n == 1, nil
}

func (l redisLease) Renew(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	n, err := renewLease.Run(ctx, l.c, []string{l.key(name)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("intake lease %s: renew: %w", name, err)
	}
	return n == 1, nil
}

func (l redisLease) Release(ctx context.Context, name, owner string) error {
	if err := releaseLease.Run(ctx, l.c, []string{l.key(name)}, owner).Err(); err != nil {
		return fmt.Errorf("intake lease %s: release: %w", name, err)
	}
	return nil
}

// attendCensus marks ARGV[1] alive in the sorted set KEYS[1] until ARGV[2] ms from the server's
// clock (one clock for every process), drops the owners whose time has passed and returns how
// many are left. The key itself expires three TTLs after the last attendance.
var attendCensus = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], 3 * ttl)
return redis.call('ZCARD', KEYS[1])`)

func (l redisLease) censusKey(group string) string { return l.prefix + "intake:members:" + group }

// Attend implements channels.Census: the processes sharing a set of intake leases (Discord's
// shards, Slack's socket slots) count each other in one sorted set per set,
// `<redis.prefix>intake:members:<group>`, scored by when each owner's attendance lapses.
func (l redisLease) Attend(ctx context.Context, group, owner string, ttl time.Duration) (int, error) {
	n, err := attendCensus.Run(ctx, l.c, []string{l.censusKey(group)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return 0, fmt.Errorf("intake census %s: attend: %w", group, err)
	}
	return n, nil
}

// Leave implements channels.Census.
func (l redisLease) Leave(ctx context.Context, group, owner string) error {
	if err := l.c.ZRem(ctx, l.censusKey(group), owner).Err(); err != nil {
		return fmt.Errorf("intake census %s: leave: %w", group, err)
	}
	return nil
}
