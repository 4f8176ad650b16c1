package threads

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file holds every Redis command and Lua script of threads, session logs, clarifications,
// tokens and outcomes (claim.go keeps the router's single-command helpers next to their API).
// Each script touches only the keys passed in KEYS, and the keys of one call share a hash tag
// (see keyspace), so every script runs on Redis Cluster. Each script has its own test in
// redis_test.go.

// rdb is the store's Redis access layer.
type rdb struct {
	c redis.UniversalClient
}

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

// appendTurnScript appends one turn to the session log if the thread is still current, then
// trims the log to the newest turns.
// KEYS[1] thread hash, KEYS[2] session log. ARGV: thread id, encoded turn, turns to keep.
// Returns the number of turns kept, -1 if no thread exists, -2 if the thread id is not current.
var appendTurnScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'id')
if not cur then return -1 end
if cur ~= ARGV[1] then return -2 end
local n = redis.call('RPUSH', KEYS[2], ARGV[2])
local keep = tonumber(ARGV[3])
if n > keep then
  redis.call('LTRIM', KEYS[2], -keep, -1)
  n = keep
end
return n
`)

// putClarificationScript makes a clarification the conversation's pending one, replacing any
// other. Putting the id that is already there changes nothing, so a retried put never reopens
// an answered clarification.
// KEYS[1] clarification hash. ARGV: id, allowed user, expires (unix ms), record JSON, ttl (ms).
// Returns {written (0|1), id of a pending clarification it replaced or empty}.
var putClarificationScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'id')
if cur == ARGV[1] then return {0, ''} end
local replaced = ''
if cur and redis.call('HGET', KEYS[1], 'state') == 'pending' then replaced = cur end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'state', 'pending', 'user', ARGV[2], 'exp', ARGV[3], 'data', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, replaced}
`)

// takeClarificationScript claims a pending clarification for its allowed user exactly once.
// KEYS[1] clarification hash. ARGV: id, answering user, now (unix ms).
// Returns {status} or {status, HGETALL}; status is one of ok, answered, cancelled, expired,
// foreign (left pending), replaced (another clarification took its place), notfound, corrupt.
var takeClarificationScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'id')
if cur ~= ARGV[1] then
  if not cur then return {'notfound'} end
  return {'replaced'}
end
local st = redis.call('HGET', KEYS[1], 'state')
local status
if st == 'answered' then status = 'answered'
elseif st == 'cancelled' then status = 'cancelled'
elseif st ~= 'pending' then return {'corrupt'}
else
  local exp = tonumber(redis.call('HGET', KEYS[1], 'exp'))
  if not exp then return {'corrupt'} end
  if tonumber(ARGV[3]) >= exp then status = 'expired'
  elseif redis.call('HGET', KEYS[1], 'user') ~= ARGV[2] then status = 'foreign'
  else
    redis.call('HSET', KEYS[1], 'state', 'answered', 'answered_by', ARGV[2], 'answered_at', ARGV[3])
    status = 'ok'
  end
end
return {status, redis.call('HGETALL', KEYS[1])}
`)

// recordOnceScript is SET NX PX that also returns the value already there.
// KEYS[1] the record. ARGV: value, ttl (ms). Returns {1} if stored, else {0, existing value}.
var recordOnceScript = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1} end
return {0, redis.call('GET', KEYS[1])}
`)

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

func (r rdb) ensureThread(ctx context.Context, key, id, conv string, created time.Time, session string) (bool, map[string]string, error) {
	v, err := ensureScript.Run(ctx, r.c, []string{key}, id, conv, ms(created), session).Result()
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
	v, err := resetScript.Run(ctx, r.c, []string{ck.thread, ck.log, ck.clar}, id, conv, ms(created), session).Result()
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

func (r rdb) hgetall(ctx context.Context, key string) (map[string]string, error) {
	return r.c.HGetAll(ctx, key).Result()
}

func (r rdb) setSettings(ctx context.Context, key string, settings []byte) (bool, error) {
	n, err := setSettingsScript.Run(ctx, r.c, []string{key}, settings).Int64()
	return n == 1, err
}

func (r rdb) appendTurn(ctx context.Context, ck convKeys, threadID string, turn []byte, keep int) (int64, error) {
	return appendTurnScript.Run(ctx, r.c, []string{ck.thread, ck.log}, threadID, turn, keep).Int64()
}

func (r rdb) loadTurns(ctx context.Context, logKey string) ([]string, error) {
	return r.c.LRange(ctx, logKey, 0, -1).Result()
}

func (r rdb) putClarification(ctx context.Context, key, id, user string, expires time.Time, data []byte, ttl time.Duration) (written bool, replaced string, err error) {
	v, err := putClarificationScript.Run(ctx, r.c, []string{key}, id, user, ms(expires), data, ttlMs(ttl)).Result()
	if err != nil {
		return false, "", err
	}
	list, err := replyList(v, 2)
	if err != nil {
		return false, "", err
	}
	replaced, _ = list[1].(string)
	return list[0] == int64(1), replaced, nil
}

func (r rdb) takeClarification(ctx context.Context, key, id, user string, now time.Time) (string, map[string]string, error) {
	v, err := takeClarificationScript.Run(ctx, r.c, []string{key}, id, user, ms(now)).Result()
	if err != nil {
		return "", nil, err
	}
	list, err := replyList(v, 1)
	if err != nil {
		return "", nil, err
	}
	status, _ := list[0].(string)
	if len(list) < 2 {
		return status, nil, nil
	}
	fields, err := pairs(list[1])
	return status, fields, err
}

// recordOnce stores value at key unless a value is there; it returns the value already there.
func (r rdb) recordOnce(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, []byte, error) {
	v, err := recordOnceScript.Run(ctx, r.c, []string{key}, value, ttlMs(ttl)).Result()
	if err != nil {
		return false, nil, err
	}
	list, err := replyList(v, 1)
	if err != nil {
		return false, nil, err
	}
	if list[0] == int64(1) {
		return true, nil, nil
	}
	if len(list) < 2 {
		return false, nil, fmt.Errorf("unexpected script reply %v", v)
	}
	existing, _ := list[1].(string)
	return false, []byte(existing), nil
}

// get returns a string value; found is false when the key does not exist.
func (r rdb) get(ctx context.Context, key string) (val []byte, found bool, err error) {
	b, err := r.c.Get(ctx, key).Bytes()
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
	return r.c.SetNX(ctx, key, value, ttl).Result()
}
