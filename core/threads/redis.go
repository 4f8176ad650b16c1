package threads

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/redisbatch"
)

// The store's Redis access layer is rdb: every Redis command, pipeline and Lua script of the
// store goes through it (but the two commands of the clarifications' expiry index, beside their
// callers in clarifications.go). This file holds the layer, its reply helpers and the single
// commands shared by all; the scripts and pipelines of each concern are beside it, in
// redis_<concern>.go. Each script touches only the keys passed in KEYS, and the keys of one
// call share a hash tag (see keyspace), so every script runs on Redis Cluster. Pipelines may mix
// keys of different slots: go-redis's ClusterClient splits a pipeline per node, and nothing in a
// pipeline depends on the order of commands on different keys. Each script and pipeline has its
// own test, in the redis_*_test.go file beside it.

// rdb is the store's Redis access layer.
type rdb struct {
	c redis.UniversalClient
	// b sends the calls of concurrent callers in shared pipelines: under load, many runs' thread
	// reads and writes share one round trip.
	b *redisbatch.Batcher
}

func newRDB(c redis.UniversalClient) rdb { return rdb{c: c, b: redisbatch.New(c)} }

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func ttlMs(d time.Duration) int64 {
	if m := d.Milliseconds(); m > 0 {
		return m
	}
	return 1
}

// pairs turns a flat HGETALL reply from a script into a map.
func pairs(v any) (map[string]string, error) {
	list, ok := v.([]any)
	if !ok || len(list)%2 != 0 {
		return nil, fmt.Errorf("unexpected script reply %T", v)
	}
	m := make(map[string]string, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		k, ok1 := list[i].(string)
		val, ok2 := list[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("unexpected script reply element %T/%T", list[i], list[i+1])
		}
		m[k] = val
	}
	return m, nil
}

func replyList(v any, min int) ([]any, error) {
	list, ok := v.([]any)
	if !ok || len(list) < min {
		return nil, fmt.Errorf("unexpected script reply %T (%v)", v, v)
	}
	return list, nil
}

// withPX appends a PX expiry of ttl (none when ttl is not positive) and then flags to a SET.
func withPX(args []any, ttl time.Duration, flags ...any) []any {
	if ttl > 0 {
		args = append(args, "px", max(ttl.Milliseconds(), 1))
	}
	return append(args, flags...)
}

// The single commands below go with the next shared pipeline (internal/redisbatch), as the
// scripts do: under load a command of its own took a round trip and a pooled connection for
// itself (a thread's mark, set for every message in a thread, was 5 % of the bot's CPU a
// message on Slack mentions).

// recordOnce stores value at key unless a value is there; it returns the value already there.
// It is one SET NX PX GET (Redis 7.0 and later; see runs.OpenRedis), not a script: it costs
// Redis a tenth of what a script call does.
func (r rdb) recordOnce(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, []byte, error) {
	cmd := redis.NewStringCmd(ctx, "set", key, value, "nx", "px", ttlMs(ttl), "get")
	r.b.Do(ctx, cmd)
	existing, err := cmd.Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return true, nil, nil
	case err != nil:
		return false, nil, err
	}
	return false, existing, nil
}

// get returns a string value; found is false when the key does not exist.
func (r rdb) get(ctx context.Context, key string) (val []byte, found bool, err error) {
	cmd := redis.NewStringCmd(ctx, "get", key)
	r.b.Do(ctx, cmd)
	b, err := cmd.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// setNX stores value at key with a TTL unless the key exists.
func (r rdb) setNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	cmd := redis.NewBoolCmd(ctx, withPX([]any{"set", key, value}, ttl, "nx")...)
	r.b.Do(ctx, cmd)
	return cmd.Result()
}

// set stores value at key with a TTL, replacing any value.
func (r rdb) set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	cmd := redis.NewStatusCmd(ctx, withPX([]any{"set", key, value}, ttl)...)
	r.b.Do(ctx, cmd)
	return cmd.Err()
}

// del deletes key; a missing key is not an error.
func (r rdb) del(ctx context.Context, key string) error {
	cmd := redis.NewIntCmd(ctx, "del", key)
	r.b.Do(ctx, cmd)
	return cmd.Err()
}

// hgetall reads a hash, in a round trip of its own; a missing key is an empty map.
func (r rdb) hgetall(ctx context.Context, key string) (map[string]string, error) {
	return r.c.HGetAll(ctx, key).Result()
}

// getMany reads several string keys in one pipeline (not MGET: the keys may live in different
// slots). A missing key is a nil entry with found false.
func (r rdb) getMany(ctx context.Context, keys []string) (vals [][]byte, found []bool, err error) {
	cmds := make([]*redis.StringCmd, len(keys))
	p := r.c.Pipeline()
	for i, k := range keys {
		cmds[i] = p.Get(ctx, k)
	}
	if len(keys) > 0 {
		_, _ = p.Exec(ctx) // errors are read per command: a missing key is redis.Nil
	}
	vals, found = make([][]byte, len(keys)), make([]bool, len(keys))
	for i, c := range cmds {
		b, cerr := c.Bytes()
		switch {
		case cerr == nil:
			vals[i], found[i] = b, true
		case errors.Is(cerr, redis.Nil):
		default:
			return nil, nil, cerr
		}
	}
	return vals, found, nil
}
