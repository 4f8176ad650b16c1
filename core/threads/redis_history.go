package threads

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis of the session logs and run records: their scripts. Each is tested in
// redis_history_test.go.

// appendTurnScript appends one turn to the session log if the thread is still current, then
// trims the log to the newest turns.
// KEYS[1] thread hash, KEYS[2] session log. ARGV: thread id, encoded turn, turns to keep.
// Returns the number of turns kept, -1 if no thread exists, -2 if the thread id is not current.
var appendTurnScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'id')
if not cur then return -1 end
if cur ~= ARGV[1] then return -2 end
local n = redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HINCRBY', KEYS[1], 'ls', 1)
local keep = tonumber(ARGV[3])
if n > keep then
  redis.call('LTRIM', KEYS[2], -keep, -1)
  n = keep
end
return n
`)

// beginRunScript reads how a run stands: its recorded end if it has one; otherwise it ensures
// the conversation's thread (as ensureScript) and reads the session log, in one step — only the
// turns after the caller's mark when the caller holds the log up to it (see LogMark): the mark's
// thread is current, and the turn the mark names its newest is still in the log, byte for byte,
// where the thread's turn count ('ls', counted by every append) puts it.
// KEYS[1] run record, KEYS[2] thread hash, KEYS[3] session log.
// ARGV: id, conversation key, created (unix ms), session id (for a thread created now), then the
// mark: thread id, turn count, newest turn (empty: no mark).
// Returns {1, outcome, result} for a finished run, else {0, created (0|1), HGETALL of the
// thread, LRANGE of the log from the first turn after the mark (0 without one), that index}.
var beginRunScript = redis.NewScript(`
local rec = redis.call('HMGET', KEYS[1], 'outcome', 'result')
if rec[1] then return {1, rec[1], rec[2] or ''} end
local created = 0
if redis.call('HSETNX', KEYS[2], 'id', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], 'conv', ARGV[2], 'created', ARGV[3], 'session', ARGV[4])
  created = 1
end
local from = 0
local th = ARGV[7] and ARGV[7] ~= '' and redis.call('HMGET', KEYS[2], 'id', 'ls')
if th and th[1] == ARGV[5] then
  local count = tonumber(th[2] or '0')
  local have = tonumber(ARGV[6])
  if count and have and have <= count then
    local len = redis.call('LLEN', KEYS[3])
    local newer = count - have
    if newer < len and redis.call('LINDEX', KEYS[3], len - newer - 1) == ARGV[7] then from = len - newer end
  end
end
return {0, created, redis.call('HGETALL', KEYS[2]), redis.call('LRANGE', KEYS[3], from, -1), from}
`)

// finishRunScript records a run's end — its result, then its outcome — and, when a turn is
// given, appends it to the session log (as appendTurnScript) first, in one step: an outcome is
// never visible without its result and its turn, and a run that already has an outcome changes
// nothing.
// KEYS[1] run record, KEYS[2] thread hash, KEYS[3] session log.
// ARGV: outcome, result, record ttl (ms), thread id, encoded turn or empty, turns to keep.
// Returns -3 if the run already had an outcome (nothing written), -1 if a turn was given and no
// thread exists (nothing written), -2 if the thread is not current (recorded, turn not
// appended), else the number of turns kept (0 without a turn).
var finishRunScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'outcome') == 1 then return -3 end
local n = 0
if ARGV[5] ~= '' then
  local cur = redis.call('HGET', KEYS[2], 'id')
  if not cur then return -1 end
  if cur ~= ARGV[4] then
    n = -2
  else
    n = redis.call('RPUSH', KEYS[3], ARGV[5])
    redis.call('HINCRBY', KEYS[2], 'ls', 1)
    local keep = tonumber(ARGV[6])
    if n > keep then
      redis.call('LTRIM', KEYS[3], -keep, -1)
      n = keep
    end
  end
end
redis.call('HSET', KEYS[1], 'result', ARGV[2], 'outcome', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return n
`)

// runBegun is beginRunScript's reply.
type runBegun struct {
	finished        bool
	outcome, result string
	created         bool
	thread          map[string]string
	log             []string
	from            int // the index in the log of log[0]: turns before it were the mark's
}

func (r rdb) beginRun(ctx context.Context, runKey string, ck convKeys, id, conv string, created time.Time, session string, mark LogMark) (runBegun, error) {
	v, err := r.b.Eval(ctx, beginRunScript, []string{runKey, ck.thread, ck.log}, id, conv, ms(created), session,
		mark.ThreadID, mark.Count, mark.Newest).Result()
	if err != nil {
		return runBegun{}, err
	}
	list, err := replyList(v, 3)
	if err != nil {
		return runBegun{}, err
	}
	if list[0] == int64(1) {
		out, _ := list[1].(string)
		res, _ := list[2].(string)
		return runBegun{finished: true, outcome: out, result: res}, nil
	}
	if len(list) < 4 {
		return runBegun{}, fmt.Errorf("unexpected script reply %v", v)
	}
	fields, err := pairs(list[2])
	if err != nil {
		return runBegun{}, err
	}
	raw, ok := list[3].([]any)
	if !ok {
		return runBegun{}, fmt.Errorf("unexpected script reply element %T", list[3])
	}
	log := make([]string, len(raw))
	for i, e := range raw {
		if log[i], ok = e.(string); !ok {
			return runBegun{}, fmt.Errorf("unexpected script reply element %T", e)
		}
	}
	from := 0
	if len(list) > 4 {
		f, ok := list[4].(int64)
		if !ok || f < 0 || f > math.MaxInt32 {
			return runBegun{}, fmt.Errorf("unexpected script reply element %v", list[4])
		}
		from = int(f)
	}
	return runBegun{created: list[1] == int64(1), thread: fields, log: log, from: from}, nil
}

func (r rdb) finishRun(ctx context.Context, runKey string, ck convKeys, outcome string, result []byte, ttl time.Duration, threadID string, turn []byte, keep int) (int64, error) {
	return r.b.Eval(ctx, finishRunScript, []string{runKey, ck.thread, ck.log}, outcome, result, ttlMs(ttl), threadID, turn, keep).Int64()
}
func (r rdb) appendTurn(ctx context.Context, ck convKeys, threadID string, turn []byte, keep int) (int64, error) {
	return r.b.Eval(ctx, appendTurnScript, []string{ck.thread, ck.log}, threadID, turn, keep).Int64()
}

func (r rdb) loadTurns(ctx context.Context, logKey string) ([]string, error) {
	return r.c.LRange(ctx, logKey, 0, -1).Result()
}
