--[[
  Claims the expectations whose next step is due: each one's attempt number goes up by one and it is
  held for the lease (its due score moves to now + lease). An attempt is claimed once only, so a
  process that dies after the claim leaves that attempt spent: the next claim, after the lease, is
  the next attempt, and no due time is ever inquired about twice. Settled ones are dropped.

    Input:
      KEYS[1] due expectations (zset, by the time of their next step)
      KEYS[2] the archive stream, with the archive on (absent when off)
      ARGV[1] now (ms)
      ARGV[2] the lease (ms)
      ARGV[3] the most to claim
      ARGV[4] the prefix of an expectation's hash (same hash tag as KEYS[1])
    Output:
      a flat list: id, attempt, the state before the claim, the due time claimed; for each one claimed
]]
--- @include "expect-archive"
local now = tonumber(ARGV[1])
local out = {}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
for i = 1, #due, 2 do
  local id = due[i]
  local key = ARGV[4] .. id
  local state = redis.call('HGET', key, 'state')
  if state == 'open' or state == 'overdue' then
    local attempt = redis.call('HINCRBY', key, 'attempt', 1)
    redis.call('HSET', key, 'state', 'overdue', 'updatedAt', ARGV[1])
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), id)
    archiveExpectation(KEYS[2], key)
    out[#out + 1] = id
    out[#out + 1] = tostring(attempt)
    out[#out + 1] = state
    out[#out + 1] = due[i + 1]
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out
