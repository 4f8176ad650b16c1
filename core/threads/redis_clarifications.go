package threads

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis of the clarifications: the scripts of a conversation's clarification record. Each
// is tested in redis_clarifications_test.go.

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
// KEYS[1] clarification hash. ARGV: id, answering user, now (unix ms), mode. The allowed user
// '*' lets anyone answer (the caller checks who may). In mode 'expire' it takes a pending
// clarification whose time is up, for nobody (answered_by empty), and answers open while
// there is time left.
// Returns {status} or {status, HGETALL}; status is one of ok, answered, cancelled, expired,
// foreign (left pending), replaced (another clarification took its place), notfound, open,
// corrupt.
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
  local user = redis.call('HGET', KEYS[1], 'user')
  if ARGV[4] == 'expire' then
    if tonumber(ARGV[3]) < exp then return {'open'} end
    redis.call('HSET', KEYS[1], 'state', 'answered', 'answered_by', '', 'answered_at', ARGV[3])
    status = 'ok'
  elseif tonumber(ARGV[3]) >= exp then status = 'expired'
  elseif user ~= ARGV[2] and user ~= '*' then status = 'foreign'
  else
    redis.call('HSET', KEYS[1], 'state', 'answered', 'answered_by', ARGV[2], 'answered_at', ARGV[3])
    status = 'ok'
  end
end
return {status, redis.call('HGETALL', KEYS[1])}
`)

// withdrawClarificationScript cancels a conversation's pending clarification.
// KEYS[1] clarification hash. Returns {} when none is pending, else {HGETALL} as it was before.
var withdrawClarificationScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'state') ~= 'pending' then return {} end
local before = redis.call('HGETALL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'cancelled')
return {before}
`)

func (r rdb) putClarification(ctx context.Context, key, id, user string, expires time.Time, data []byte, ttl time.Duration) (written bool, replaced string, err error) {
	v, err := r.b.Eval(ctx, putClarificationScript, []string{key}, id, user, ms(expires), data, ttlMs(ttl)).Result()
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

func (r rdb) takeClarification(ctx context.Context, key, id, user string, now time.Time, mode string) (string, map[string]string, error) {
	v, err := r.b.Eval(ctx, takeClarificationScript, []string{key}, id, user, ms(now), mode).Result()
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

// withdrawClarification cancels the pending clarification at key and returns its record as it
// was; fields is nil when none was pending.
func (r rdb) withdrawClarification(ctx context.Context, key string) (map[string]string, error) {
	v, err := r.b.Eval(ctx, withdrawClarificationScript, []string{key}).Result()
	if err != nil {
		return nil, err
	}
	list, err := replyList(v, 0)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return pairs(list[0])
}
