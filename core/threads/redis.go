package threads

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/redisbatch"
	"github.com/switchboard-bot/switchboard/internal/redisscan"
)

// This file holds every Redis command, pipeline and Lua script of the store: threads, session
// logs, clarifications, tokens, outcomes, run records, and the router's claims, marks and access
// lists. Each script touches only the keys passed in KEYS, and the keys of one call share a hash
// tag (see keyspace), so every script runs on Redis Cluster. Pipelines may mix keys of
// different slots: go-redis's ClusterClient splits a pipeline per node, and nothing in a
// pipeline depends on the order of commands on different keys. Each script and pipeline has its
// own test in redis_test.go (claims, marks and access lists in claim_test.go).

// rdb is the store's Redis access layer.
type rdb struct {
	c redis.UniversalClient
	// b sends the calls of concurrent callers in shared pipelines: under load, many runs' thread
	// reads and writes share one round trip.
	b *redisbatch.Batcher
}

func newRDB(c redis.UniversalClient) rdb { return rdb{c: c, b: redisbatch.New(c)} }

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
redis.call('HINCRBY', KEYS[1], 'ls', 1)
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

func (r rdb) hgetall(ctx context.Context, key string) (map[string]string, error) {
	return r.c.HGetAll(ctx, key).Result()
}

func (r rdb) setSettings(ctx context.Context, key string, settings []byte) (bool, error) {
	n, err := r.b.Eval(ctx, setSettingsScript, []string{key}, settings).Int64()
	return n == 1, err
}

func (r rdb) appendTurn(ctx context.Context, ck convKeys, threadID string, turn []byte, keep int) (int64, error) {
	return r.b.Eval(ctx, appendTurnScript, []string{ck.thread, ck.log}, threadID, turn, keep).Int64()
}

func (r rdb) loadTurns(ctx context.Context, logKey string) ([]string, error) {
	return r.c.LRange(ctx, logKey, 0, -1).Result()
}

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

// The single commands below go with the next shared pipeline (internal/redisbatch), as the
// scripts do: under load a command of its own took a round trip and a pooled connection for
// itself (a thread's mark, set for every message in a thread, was 5 % of the bot's CPU a
// message on Slack mentions).

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

// Claim values. A claim taken with a token holds "p:<token>" while its event is being handled
// (pending); completing it replaces that with claimDone. A claim taken without a token holds
// claimDone at once (Claim, and Intake without ClaimToken).
const (
	claimPendingPrefix = "p:"
	claimDone          = "1"
)

// releaseClaimScript deletes a pending claim if it still holds the caller's token.
// KEYS[1] claim. ARGV: pending value. Returns 1 if deleted.
var releaseClaimScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// completeClaimScript marks a claim done for ttl unless another attempt holds it: it is set when
// absent (expired meanwhile) or still pending under the caller's token.
// KEYS[1] claim. ARGV: pending value, done value, ttl (ms). Returns 1 if set.
var completeClaimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`)

func (r rdb) releaseClaim(ctx context.Context, key, pending string) error {
	return r.b.Eval(ctx, releaseClaimScript, []string{key}, pending).Err()
}

func (r rdb) completeClaim(ctx context.Context, key, pending string, ttl time.Duration) error {
	return r.b.Eval(ctx, completeClaimScript, []string{key}, pending, claimDone, ttlMs(ttl)).Err()
}

// del deletes key; a missing key is not an error.
func (r rdb) del(ctx context.Context, key string) error {
	cmd := redis.NewIntCmd(ctx, "del", key)
	r.b.Do(ctx, cmd)
	return cmd.Err()
}

// moveMember adds member to the set add and removes it from rem in one MULTI; the two sets share
// a hash tag (see keyspace.access).
func (r rdb) moveMember(ctx context.Context, add, rem, member string) error {
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, add, member)
		p.SRem(ctx, rem, member)
		return nil
	})
	return err
}

// memberOfBoth reports whether member is in set a and in set b, in one pipelined round trip.
func (r rdb) memberOfBoth(ctx context.Context, a, b, member string) (inA, inB bool, err error) {
	var ca, cb *redis.BoolCmd
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		ca = p.SIsMember(ctx, a, member)
		cb = p.SIsMember(ctx, b, member)
		return nil
	})
	if err != nil {
		return false, false, err
	}
	return ca.Val(), cb.Val(), nil
}

// intakeOps are the commands of one Intake round trip; a step whose key is empty is left out.
type intakeOps struct {
	claimKey string
	claimTTL time.Duration
	// pending is the claim's value while pending ("p:<token>"); empty: claim as Claim does.
	pending string
	seenKey string
	// allowKey and denyKey are checked for member when both are set.
	allowKey, denyKey, member string
	clarKey                   string
	markedKey                 string
	marks                     []markOp
}

// markOp is one SET PX of a mark.
type markOp struct {
	key   string
	value []byte
	ttl   time.Duration
}

// intakeReply is what an intake round trip read; claimed reports that claimKey was taken.
type intakeReply struct {
	claimed         bool
	claimPending    bool // held pending by another token
	seen            bool
	allowed, denied bool
	clar            map[string]string
	marked          []byte
	isMarked        bool
}

// withPX appends a PX expiry of ttl (none when ttl is not positive) and then flags to a SET.
func withPX(args []any, ttl time.Duration, flags ...any) []any {
	if ttl > 0 {
		args = append(args, "px", max(ttl.Milliseconds(), 1))
	}
	return append(args, flags...)
}

// intake runs ops together (in a pipeline shared with concurrent callers). The claim is SET NX PX
// (with GET when pending); the reads see the state as it was
// before the pipeline's writes only where they touch the same keys, which they never do. On an
// error the reply still says whether the claim was taken, so the caller can give it back.
func (r rdb) intake(ctx context.Context, ops intakeOps) (intakeReply, error) {
	var (
		rep         intakeReply
		claim       *redis.BoolCmd
		holder      *redis.StringCmd // a pending claim's SET NX GET: nil when taken, else who holds it
		seen        *redis.IntCmd
		allow, deny *redis.BoolCmd
		clar        *redis.MapStringStringCmd
		marked      *redis.StringCmd
	)
	cmds := make([]redis.Cmder, 0, 7+len(ops.marks))
	switch {
	case ops.claimKey != "" && ops.pending != "":
		// One command takes the claim or says who holds it (SET NX GET, Redis 7.0): this token
		// (a retry after a release that failed), another attempt still pending, or a completed
		// one.
		holder = redis.NewStringCmd(ctx, withPX([]any{"set", ops.claimKey, ops.pending}, ops.claimTTL, "nx", "get")...)
		cmds = append(cmds, holder)
	case ops.claimKey != "":
		claim = redis.NewBoolCmd(ctx, withPX([]any{"set", ops.claimKey, claimDone}, ops.claimTTL, "nx")...)
		cmds = append(cmds, claim)
	}
	if ops.seenKey != "" {
		seen = redis.NewIntCmd(ctx, "exists", ops.seenKey)
		cmds = append(cmds, seen)
	}
	if ops.allowKey != "" && ops.denyKey != "" {
		allow = redis.NewBoolCmd(ctx, "sismember", ops.allowKey, ops.member)
		deny = redis.NewBoolCmd(ctx, "sismember", ops.denyKey, ops.member)
		cmds = append(cmds, allow, deny)
	}
	if ops.clarKey != "" {
		clar = redis.NewMapStringStringCmd(ctx, "hgetall", ops.clarKey)
		cmds = append(cmds, clar)
	}
	if ops.markedKey != "" {
		marked = redis.NewStringCmd(ctx, "get", ops.markedKey)
		cmds = append(cmds, marked)
	}
	sets := make([]*redis.StatusCmd, 0, len(ops.marks))
	for _, m := range ops.marks {
		set := redis.NewStatusCmd(ctx, withPX([]any{"set", m.key, m.value}, m.ttl)...)
		sets = append(sets, set)
		cmds = append(cmds, set)
	}
	if len(cmds) == 0 {
		return rep, nil
	}
	r.b.Do(ctx, cmds...) // errors are read per command below: a missing mark is redis.Nil, not a failure
	var first error
	keep := func(err error) {
		if err != nil && !errors.Is(err, redis.Nil) && first == nil {
			first = err
		}
	}
	if claim != nil {
		rep.claimed = claim.Err() == nil && claim.Val()
		keep(claim.Err())
	}
	if holder != nil {
		v, err := holder.Result()
		rep.claimed = errors.Is(err, redis.Nil) || err == nil && v == ops.pending
		rep.claimPending = err == nil && !rep.claimed && strings.HasPrefix(v, claimPendingPrefix)
		keep(err)
	}
	if seen != nil {
		rep.seen = seen.Val() > 0
		keep(seen.Err())
	}
	if allow != nil {
		rep.allowed, rep.denied = allow.Val(), deny.Val()
		keep(allow.Err())
		keep(deny.Err())
	}
	if clar != nil {
		rep.clar = clar.Val()
		keep(clar.Err())
	}
	if marked != nil {
		b, err := marked.Bytes()
		rep.marked, rep.isMarked = b, err == nil
		keep(err)
	}
	for _, c := range sets {
		keep(c.Err())
	}
	return rep, first
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
