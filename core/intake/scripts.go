package intake

import "github.com/redis/go-redis/v9"

// The Lua scripts. Each takes exactly one key (KEYS[1]), so it runs on one Redis Cluster slot
// whatever the key's name, and on the embedded store alike.

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

// renewLease extends KEYS[1] to ARGV[2] ms if ARGV[1] holds it; 1 when it did. A lease that
// lapsed is not taken again here: its owner must acquire it like anyone else.
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

// saveForward sets KEYS[1] to ARGV[1] unless it already holds a value as large.
var saveForward = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local v = tonumber(ARGV[1])
if v > cur then redis.call('SET', KEYS[1], ARGV[1]) end
return 1`)
