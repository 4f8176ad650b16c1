package threads

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/redisscan"
)

// The Redis of the conversations' threads: the thread record's scripts, and the scan that
// ForgetWhere walks. Each is tested in redis_conversations_test.go.

// ensureScript creates the thread record unless one exists, in one step, so that racing first
// messages agree on one thread.
// KEYS[1] thread hash. ARGV: id, conversation key, created (unix ms), session id.
// Returns {created (0|1), HGETALL of the record}.
var ensureScript = redis.NewScript(`
local created = 0
if redis.call('HSETNX', KEYS[1], 'id', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'conv', ARGV[2], 'created', ARGV[3], 'session', ARGV[4])
  created = 1
end
return {created, redis.call('HGETALL', KEYS[1])}
`)

// resetScript replaces the thread record with a new thread (keeping its settings), drops the
// session log and cancels a pending clarification, in one step.
// KEYS[1] thread hash, KEYS[2] session log, KEYS[3] clarification hash.
// ARGV: new id, conversation key, created (unix ms), session id.
// Returns {previous thread id or empty, cancelled clarification id or empty, HGETALL of the record}.
var resetScript = redis.NewScript(`
local settings = redis.call('HGET', KEYS[1], 'settings')
local old = redis.call('HGET', KEYS[1], 'id')
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'conv', ARGV[2], 'created', ARGV[3], 'session', ARGV[4])
if settings then redis.call('HSET', KEYS[1], 'settings', settings) end
local cancelled = ''
if redis.call('HGET', KEYS[3], 'state') == 'pending' then
  redis.call('HSET', KEYS[3], 'state', 'cancelled')
  cancelled = redis.call('HGET', KEYS[3], 'id') or ''
end
return {old or '', cancelled, redis.call('HGETALL', KEYS[1])}
`)

// setSettingsScript stores settings on an existing thread only (it never creates a record
// without an id).
// KEYS[1] thread hash. ARGV: settings JSON. Returns 1 if stored, 0 if no thread exists.
var setSettingsScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'settings', ARGV[1])
return 1
`)

// forgetScript deletes a conversation's thread record and session log and cancels its pending
// clarification, in one step. The clarification's record is kept, cancelled, until its TTL, so
// a late click is told it was withdrawn.
// KEYS[1] thread hash, KEYS[2] session log, KEYS[3] clarification hash.
// Returns {1 if a thread record was deleted else 0, cancelled clarification id or empty}.
var forgetScript = redis.NewScript(`
local cancelled = ''
if redis.call('HGET', KEYS[3], 'state') == 'pending' then
  redis.call('HSET', KEYS[3], 'state', 'cancelled')
  cancelled = redis.call('HGET', KEYS[3], 'id') or ''
end
local had = redis.call('EXISTS', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
return {had, cancelled}
`)

func (r rdb) ensureThread(ctx context.Context, key, id, conv string, created time.Time, session string) (bool, map[string]string, error) {
	v, err := r.b.Eval(ctx, ensureScript, []string{key}, id, conv, ms(created), session).Result()
	if err != nil {
		return false, nil, err
	}
	list, err := replyList(v, 2)
	if err != nil {
		return false, nil, err
	}
	fields, err := pairs(list[1])
	return list[0] == int64(1), fields, err
}

func (r rdb) resetThread(ctx context.Context, ck convKeys, id, conv string, created time.Time, session string) (old, cancelled string, fields map[string]string, err error) {
	v, err := r.b.Eval(ctx, resetScript, []string{ck.thread, ck.log, ck.clar}, id, conv, ms(created), session).Result()
	if err != nil {
		return "", "", nil, err
	}
	list, err := replyList(v, 3)
	if err != nil {
		return "", "", nil, err
	}
	old, _ = list[0].(string)
	cancelled, _ = list[1].(string)
	fields, err = pairs(list[2])
	return old, cancelled, fields, err
}

func (r rdb) setSettings(ctx context.Context, key string, settings []byte) (bool, error) {
	n, err := r.b.Eval(ctx, setSettingsScript, []string{key}, settings).Int64()
	return n == 1, err
}

func (r rdb) forget(ctx context.Context, ck convKeys) (had bool, cancelled string, err error) {
	v, err := r.b.Eval(ctx, forgetScript, []string{ck.thread, ck.log, ck.clar}).Result()
	if err != nil {
		return false, "", err
	}
	list, err := replyList(v, 2)
	if err != nil {
		return false, "", err
	}
	cancelled, _ = list[1].(string)
	return list[0] == int64(1), cancelled, nil
}

// scanThreads calls fn, one call at a time, with the key and conversation of every thread
// record under prefix, on every master of a cluster.
func (r rdb) scanThreads(ctx context.Context, prefix string, fn func(key, conv string)) error {
	return redisscan.Each(ctx, r.c, prefix+"{conv:*}:thread", func(key string) error {
		conv, err := r.c.HGet(ctx, key, "conv").Result()
		if errors.Is(err, redis.Nil) {
			return nil // deleted meanwhile
		}
		if err == nil {
			fn(key, conv)
		}
		return err
	})
}
