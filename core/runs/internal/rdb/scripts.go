package rdb

import "github.com/redis/go-redis/v9"

// The Lua scripts. Each touches either the keys of one conversation (hash tag {conv:…}) or the
// global keys (hash tag {global}), never both, so each runs on one Redis Cluster slot.
//
// Conversation state hash (st) fields:
//
//	k   the conversation key string (for admin listings)
//	hs  ms time a hint was asked for and no worker has claimed since (the backstop scan uses it)
//	o   lease owner (a worker token); d: lease deadline in ms
//	a   run id of the active run (always the mailbox head once claimed); n: its attempt count
//	c   run id of the active run when it has been cancelled
//	h   how many of the active run's attempts were handed back unfinished (release): they count
//	    in n, so a later attempt knows it is a replay, but not against the attempt limit
//
// The state hash exists exactly while the conversation is scheduled: its mailbox (q, a list of
// "<run id>\n<envelope>" entries) is non-empty or a worker holds it.
//
// The global admitted set (a hash) maps "<tag>|<run id>" of every admitted, unfinished run to its
// admission time (ms, Redis TIME of the global slot's node); its HLEN is the pending count the
// global limit is checked against. Runs leave it in the settler's batches, on dead-lettering and
// on cancellation; a member left behind by a crash is reconciled (absent below, then forget).
//
// The global unhinted index (a sorted set) holds "<tag>|<run id>" of every run whose enqueuer is
// about to put it in an idle conversation's mailbox, scored with the enqueuer's clock (ms). The
// enqueuer adds it before the push — acknowledged first on a cluster, ahead of the push in the
// same pipeline otherwise — and the ready script that hints the conversation removes it, so an
// entry older than a few seconds is a run whose enqueuer died between its two steps; the
// recoverer finds those with one range query (rescue below) instead of a scan of every key.

const luaRunID = `
local function rid(e)
  local i = string.find(e, "\n", 1, true)
  if i then return string.sub(e, 1, i - 1) end
  return e
end
`

// luaNow defines nowMs(): the Redis server's clock in ms. Admission times come from it, so that
// the admission window (enqueue) and the reconciliation's age (absent, forget) are measured on
// Redis clocks rather than on the clocks of the processes involved.
const luaNow = `
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// enqueue: KEYS st, q[, seen]. ARGV mode(probe|push|append), entry, maxPerConv, interrupt(1|0),
// now, convKey, admitted at (ms, Redis clock; 0 when the run is not admitted yet), admission
// window (ms), seen ttl (ms). The optional seen key marks the inbound event the run answers: when
// it exists the event was queued already and nothing is done ("duplicate"); when the entry is
// pushed it is set (the run id, for the ttl) in the same step, so an event is marked exactly
// when its run is in the mailbox. An admitted run whose admission is older than the window is
// refused ("late") before anything else: past the window the reconciliation may have forgotten
// its admission, and a run must never sit in a mailbox uncounted. An unscheduled conversation
// gets the entry and a fresh state at once ("new": the caller must admit it globally and hint
// it, or retract it) unless the mode is append, which pushes only behind a scheduled
// conversation's work ("idle": nothing was pushed; the caller indexes the run first, see
// unhinted). A scheduled one is only probed ("scheduled") in probe mode; in push and append modes
// the entry is appended ("queued", activeCancelled, removed ids...).
var scriptEnqueue = redis.NewScript(luaRunID + luaNow + `
if KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then return {'duplicate', ''} end
local function seen()
  if KEYS[3] then redis.call('SET', KEYS[3], rid(ARGV[2]), 'PX', ARGV[9]) end
end
local at = tonumber(ARGV[7])
if at > 0 and nowMs() - at > tonumber(ARGV[8]) then return {'late', ''} end
if redis.call('EXISTS', KEYS[1]) == 0 then
  if ARGV[1] == 'append' then return {'idle', ''} end
  redis.call('RPUSH', KEYS[2], ARGV[2])
  redis.call('HSET', KEYS[1], 'k', ARGV[6], 'hs', ARGV[5])
  seen()
  return {'new', ''}
end
local interrupt = ARGV[4] == '1'
local max = tonumber(ARGV[3])
if not interrupt and max > 0 and redis.call('LLEN', KEYS[2]) >= max then return {'busy', ''} end
if ARGV[1] == 'probe' then return {'scheduled', ''} end
local out = {'queued', ''}
if interrupt then
  local active = redis.call('HGET', KEYS[1], 'a')
  for _, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
    local id = rid(e)
    if id ~= active then
      redis.call('LREM', KEYS[2], 1, e)
      table.insert(out, id)
    end
  end
  if active and active ~= '' then
    redis.call('HSET', KEYS[1], 'c', active)
    out[2] = active
  end
end
redis.call('RPUSH', KEYS[2], ARGV[2])
seen()
return out
`)

// retract: KEYS st, q[, seen]. ARGV entry. Undoes a "new" enqueue the global gate refused, the
// event's seen mark with it. Returns 1 when other entries arrived meanwhile (the conversation
// still needs a hint), else 0.
var scriptRetract = redis.NewScript(`
if KEYS[3] then redis.call('DEL', KEYS[3]) end
redis.call('LREM', KEYS[2], 1, ARGV[1])
if redis.call('LLEN', KEYS[2]) > 0 then return 1 end
if not redis.call('HGET', KEYS[1], 'o') then redis.call('DEL', KEYS[1]) end
return 0
`)

// claim: KEYS st, q. ARGV owner, now, deadline. Takes the conversation's lease when it is free,
// expired or already the caller's, and returns {'run', head entry, attempt, cancelled, handed
// back}. Returns
// {'held', owner} when another worker's lease is live, {'empty'} when there is nothing to run.
var scriptClaim = redis.NewScript(luaRunID + `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'empty'} end
local o = redis.call('HGET', KEYS[1], 'o')
if o and o ~= ARGV[1] then
  local d = tonumber(redis.call('HGET', KEYS[1], 'd') or '0')
  if d > tonumber(ARGV[2]) then return {'held', o} end
end
local head = redis.call('LINDEX', KEYS[2], 0)
if not head then
  redis.call('DEL', KEYS[1])
  return {'empty'}
end
local id = rid(head)
if redis.call('HGET', KEYS[1], 'a') ~= id then
  redis.call('HSET', KEYS[1], 'a', id, 'n', 0)
  redis.call('HDEL', KEYS[1], 'c', 'h')
end
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'd', ARGV[3])
redis.call('HDEL', KEYS[1], 'hs')
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
local c = 0
if redis.call('HGET', KEYS[1], 'c') == id then c = 1 end
return {'run', head, n, c, tonumber(redis.call('HGET', KEYS[1], 'h') or '0')}
`)

// ack: KEYS st, q. ARGV owner, run id, deadline. Removes the finished run (when still the head)
// and, keeping the lease, hands over the next entry {'next', entry, 1, 0, 0}; or drops the state
// when the mailbox is empty {'idle'}. {'lost'} when the caller no longer holds the lease.
var scriptAck = redis.NewScript(luaRunID + `
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return {'lost'} end
local head = redis.call('LINDEX', KEYS[2], 0)
if head and rid(head) == ARGV[2] then redis.call('LPOP', KEYS[2]) end
local nxt = redis.call('LINDEX', KEYS[2], 0)
if not nxt then
  redis.call('DEL', KEYS[1])
  return {'idle'}
end
redis.call('HSET', KEYS[1], 'a', rid(nxt), 'n', 1, 'd', ARGV[3])
redis.call('HDEL', KEYS[1], 'c', 'h')
return {'next', nxt, 1, 0, 0}
`)

// renew: KEYS st. ARGV owner, run id, deadline, bump(1|0). Extends the caller's lease on the
// active run, counting a new attempt when bump is 1. Returns {'ok', attempt, cancelled} or
// {'lost'}.
var scriptRenew = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'a') ~= ARGV[2] then
  return {'lost'}
end
redis.call('HSET', KEYS[1], 'd', ARGV[3])
local n
if ARGV[4] == '1' then
  n = redis.call('HINCRBY', KEYS[1], 'n', 1)
else
  n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
end
local c = 0
if redis.call('HGET', KEYS[1], 'c') == ARGV[2] then c = 1 end
return {'ok', n, c}
`)

// release: KEYS st, q. ARGV owner, now. Gives the lease up without finishing the run (shutdown
// hands it back); the active run's attempt is counted as handed back (h), not against the limit.
// Returns 1 when the mailbox still holds work (the caller re-hints it), 0 when the state was
// dropped, -1 when the caller was not the owner.
var scriptRelease = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return -1 end
redis.call('HDEL', KEYS[1], 'o', 'd')
if redis.call('HGET', KEYS[1], 'a') then redis.call('HINCRBY', KEYS[1], 'h', 1) end
if redis.call('LLEN', KEYS[2]) == 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('HSET', KEYS[1], 'hs', ARGV[2])
return 1
`)

// cancel: KEYS st, q. ARGV run id (empty for every run of the conversation). Removes matching queued
// runs and flags the active one. Returns {activeCancelled or empty, removed ids...}.
var scriptCancel = redis.NewScript(luaRunID + `
local out = {''}
if redis.call('EXISTS', KEYS[1]) == 0 then return out end
local active = redis.call('HGET', KEYS[1], 'a')
for _, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
  local id = rid(e)
  if id ~= active and (ARGV[1] == '' or ARGV[1] == id) then
    redis.call('LREM', KEYS[2], 1, e)
    table.insert(out, id)
  end
end
if active and active ~= '' and (ARGV[1] == '' or ARGV[1] == active) then
  redis.call('HSET', KEYS[1], 'c', active)
  out[1] = active
end
if redis.call('LLEN', KEYS[2]) == 0 and not redis.call('HGET', KEYS[1], 'o') then
  redis.call('DEL', KEYS[1])
end
return out
`)

// rescue: KEYS st, q. ARGV run id, now. The conversation side of rescuing a run found in the
// unhinted index (its enqueuer indexed it and did not hint it in time: it died between its two
// steps, or is slow). {'again', in} when the conversation is scheduled and no worker holds it:
// nobody will reach it, so the caller hints the conversation, and counts the run when in is 1 (it
// is in the mailbox; the dead enqueuer may not have admitted it); 'hs' is set to now. The run
// itself may be gone while others queued behind it wait (a /cancel of it): they need the hint all
// the same (and a state left without a mailbox needs it so that a claim drops it). {'held'} when
// a worker holds the conversation: its acknowledgements reach the run (or, if it died, the
// recoverer takes its hint over), so the caller drops the index entry. {'absent'} when the
// conversation is not scheduled: the run ran already, was refused or retracted, or its push is
// still on its way; the caller drops the entry once it is older than any enqueue can take.
var scriptRescue = redis.NewScript(luaRunID + `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'absent', 0} end
if redis.call('HGET', KEYS[1], 'o') then return {'held', 0} end
local found = 0
for _, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
  if rid(e) == ARGV[1] then found = 1 break end
end
redis.call('HSET', KEYS[1], 'hs', ARGV[2])
return {'again', found}
`)

// rescueStale: KEYS st, q. ARGV now, stale-before, queued(1|0). The backstop of the unhinted
// index (the start-up and hourly scan): re-arms a conversation whose hint was asked for before
// stale-before and never claimed — one queued by a version without the index. A conversation a
// worker holds is left alone (its run is running, waiting — on a platform's pacer, say — or
// waiting out a retry), and so is one whose hint is still in the ready stream (queued is 1: the
// caller read the stream), only waiting for a free worker. Returns {'again', the head's run id,
// empty when the mailbox is} when the caller must hint it again (and count the head), {'waiting',
// empty} for a stale one whose hint is queued, {'none', empty} otherwise.
var scriptRescueStale = redis.NewScript(luaRunID + `
local hs = redis.call('HGET', KEYS[1], 'hs')
if not hs or tonumber(hs) > tonumber(ARGV[2]) then return {'none', ''} end
if redis.call('HGET', KEYS[1], 'o') then return {'none', ''} end
if ARGV[3] == '1' then return {'waiting', ''} end
redis.call('HSET', KEYS[1], 'hs', ARGV[1])
local head = redis.call('LINDEX', KEYS[2], 0)
if not head then return {'again', ''} end
return {'again', rid(head)}
`)

// absent: KEYS q. ARGV run ids. Returns {now (ms, Redis clock), ids not in the mailbox...}: the
// conversation side of reconciling the admitted set. A run leaves its mailbox only when finished,
// cancelled or dead-lettered, and comes back only as a replayed dead letter, admitted anew; so an
// absent run stays absent under its old admission.
var scriptAbsent = redis.NewScript(luaRunID + luaNow + `
local out = {nowMs()}
local here = {}
for _, e in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do here[rid(e)] = true end
for i = 1, #ARGV do
  if not here[ARGV[i]] then out[#out + 1] = ARGV[i] end
end
return out
`)

// forget: KEYS admitted. ARGV (member, cutoff ms)... Removes each member admitted at or before its
// cutoff (or with no readable admission time), the global side of reconciling: the caller found its run absent from its mailbox at a
// time t (absent's clock) and passes t minus the reconciliation age as the cutoff, so a member
// admitted since (a replayed run's new admission) stays. Returns how many it removed.
var scriptForget = redis.NewScript(`
local n = 0
for i = 1, #ARGV, 2 do
  local at = redis.call('HGET', KEYS[1], ARGV[i])
  if at and (tonumber(at) or 0) <= tonumber(ARGV[i + 1]) then
    redis.call('HDEL', KEYS[1], ARGV[i])
    n = n + 1
  end
end
return n
`)

// ready: KEYS paused, admitted, ready stream, unhinted. ARGV mode(check|force|none), member,
// maxPending, hint tag (empty for none), unindex(1|0). check refuses when intake is paused or the
// admitted set holds maxPending runs, and otherwise admits member — a member admitted already (a
// rescue counted it while its enqueuer was slow) is never refused; force admits member unless it
// is admitted already (rescue: the run is in its mailbox whatever the limit says); then, unless
// refused, it removes member from the unhinted index when unindex is 1 and adds the hint, in the
// same step, so a run leaves the index exactly when its conversation is hinted. Returns {'ok',
// admitted at (ms, Redis clock; 0 without admission)}, {'paused', 0} or {'busy', 0}.
var scriptReady = redis.NewScript(luaNow + `
local at = 0
if ARGV[1] == 'check' then
  local had = redis.call('HGET', KEYS[2], ARGV[2])
  if had then
    at = tonumber(had) or 0
  else
    if redis.call('EXISTS', KEYS[1]) == 1 then return {'paused', 0} end
    local max = tonumber(ARGV[3])
    if max > 0 and redis.call('HLEN', KEYS[2]) >= max then return {'busy', 0} end
    at = nowMs()
    redis.call('HSET', KEYS[2], ARGV[2], at)
  end
elseif ARGV[1] == 'force' then
  at = nowMs()
  redis.call('HSETNX', KEYS[2], ARGV[2], at)
end
if ARGV[5] == '1' then redis.call('ZREM', KEYS[4], ARGV[2]) end
if ARGV[4] ~= '' then redis.call('XADD', KEYS[3], '*', 'c', ARGV[4]) end
return {'ok', at}
`)

// luaHdel defines hdel(key, from, to): HDEL of ARGV[from..to] in chunks that stay well inside
// Lua's unpack limit.
const luaHdel = `
local function hdel(key, from, to)
  while from <= to do
    local last = math.min(to, from + 499)
    redis.call('HDEL', key, unpack(ARGV, from, last))
    from = last + 1
  end
end
`

// luaRecent defines recent(key, now, name, delta): adds delta to counter name in the current
// minute's bucket of the recent hash (see recent.go): field "<unix minute>:<name>", the minute
// taken from now (ms), or from Redis's clock when now is "0". Redis's clock, not the caller's:
// the {global} slot lives on one node, so every process writes, and every admin reads, on the
// same clock, however far the processes' clocks drift apart — the reconciliation's admission
// times rely on it the same way. The first call in a minute drops the buckets outside the
// window (older than 60 minutes before it, or ahead of it after a clock step back), records the
// minute in field "m" and gives the hash a TTL: a key per minute with a TTL would do on Redis,
// but the embedded miniredis never expires keys on its own, and a script may only write keys
// its caller named, which cannot be a minute read from Redis's clock.
const luaRecent = luaNow + `
local recentMinute
local function recent(key, now, name, delta)
  if not recentMinute then
    local ms = tonumber(now)
    if ms == 0 then ms = nowMs() end
    recentMinute = math.floor(ms / 60000)
    local last = redis.call('HGET', key, 'm')
    if not last or tonumber(last) ~= recentMinute then
      for _, f in ipairs(redis.call('HKEYS', key)) do
        local c = string.find(f, ':', 1, true)
        if c then
          local m = tonumber(string.sub(f, 1, c - 1))
          if not m or m < recentMinute - 60 or m > recentMinute then redis.call('HDEL', key, f) end
        end
      end
      redis.call('HSET', key, 'm', recentMinute)
      -- Set at the minute's first write: the hash outlives its newest bucket by the window.
      redis.call('EXPIRE', key, 3720)
    end
  end
  redis.call('HINCRBY', key, recentMinute .. ':' .. name, delta)
end
`

// recent: KEYS recent. ARGV now (ms; 0 for Redis's clock). Returns {now, field, value, ...}: the
// recent hash and the time to read its windows at, on the clock its buckets were written with.
var scriptRecent = redis.NewScript(luaNow + `
local now = tonumber(ARGV[1])
if now == 0 then now = nowMs() end
local out = {now}
for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do out[#out + 1] = v end
return out
`)

// settle: KEYS ready stream, admitted, stats, recent. ARGV group, now (ms; 0 for Redis's clock),
// ndone, finished members..., ncounters, (field, delta)..., nhints, hint tags..., then stream ids
// to acknowledge and delete. One call flushes a batch of finished work: finished runs leave the
// admitted set, counters (in the totals and in the current minute's bucket), new hints and spent
// hints.
var scriptSettle = redis.NewScript(luaHdel + luaRecent + `
local i = 1
local group = ARGV[i]; i = i + 1
local now = ARGV[i]; i = i + 1
local nd = tonumber(ARGV[i]); i = i + 1
if nd > 0 then hdel(KEYS[2], i, i + nd - 1) end
i = i + nd
local nc = tonumber(ARGV[i]); i = i + 1
for _ = 1, nc do
  redis.call('HINCRBY', KEYS[3], ARGV[i], ARGV[i + 1])
  recent(KEYS[4], now, ARGV[i], ARGV[i + 1])
  i = i + 2
end
local nh = tonumber(ARGV[i]); i = i + 1
for _ = 1, nh do
  redis.call('XADD', KEYS[1], '*', 'c', ARGV[i])
  i = i + 1
end
if i <= #ARGV then
  local ids = {}
  for j = i, #ARGV do ids[#ids + 1] = ARGV[j] end
  redis.call('XACK', KEYS[1], group, unpack(ids))
  redis.call('XDEL', KEYS[1], unpack(ids))
end
return 0
`)

// dead: KEYS dead stream, admitted, stats, recent. ARGV run id, reason, envelope, conv key,
// attempts, at (ms), signature failure (1|0), member, now (ms; 0 for Redis's clock). Records a
// dead letter and counts it (in the totals and the current minute's bucket); the run leaves the
// admitted set.
var scriptDead = redis.NewScript(luaRecent + `
local id = redis.call('XADD', KEYS[1], '*', 'run', ARGV[1], 'reason', ARGV[2], 'env', ARGV[3],
  'conv', ARGV[4], 'attempts', ARGV[5], 'at', ARGV[6])
redis.call('HDEL', KEYS[2], ARGV[8])
redis.call('HINCRBY', KEYS[3], 'dead_lettered', 1)
recent(KEYS[4], ARGV[9], 'dead_lettered', 1)
if ARGV[7] == '1' then
  redis.call('HINCRBY', KEYS[3], 'signature_failures', 1)
  recent(KEYS[4], ARGV[9], 'signature_failures', 1)
end
return id
`)

// prune: KEYS ready stream. ARGV group, min idle (ms), consumer to keep, max deletions. Deletes
// consumers of the group that hold no pending hint and have been idle at least min idle (dead
// processes' names; every process start adds one), up to max, and returns their names. Reading
// and deleting in one script leaves no moment for a consumer to take a hint in between: one
// with pending hints is never deleted (the recoverer reclaims them first), and deleting a live
// consumer holding nothing loses nothing (Redis creates it again at its next read). An idle time
// Redis does not know (below 0) keeps the consumer.
var scriptPrune = redis.NewScript(`
local out = {}
local max = tonumber(ARGV[4])
for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  if #out >= max then break end
  local f = {}
  for i = 1, #c, 2 do f[c[i]] = c[i + 1] end
  if f['name'] ~= ARGV[3] and tonumber(f['pending']) == 0 and tonumber(f['idle']) >= tonumber(ARGV[2]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], f['name'])
    out[#out + 1] = f['name']
  end
end
return out
`)
