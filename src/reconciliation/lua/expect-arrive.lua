--[[
  A verified notification arrived: the expectation it matches, if open or overdue, is met; if already
  settled without it (missing_notification, unresolved), the notification is noted as arriving late.

    Input:
      KEYS[1] the match hash (`<environment> <event type> <request_id>` -> id)
      KEYS[2] due expectations
      KEYS[3] open expectations
      KEYS[4] the archive stream, with the archive on (absent when off)
      ARGV[1] the match field
      ARGV[2] the event id
      ARGV[3] now (ms)
      ARGV[4] the prefix of an expectation's hash (same hash tag as the KEYS)
    Output:
      false (none) | { id, 'met' | 'late' | 'none', the state before }
]]
--- @include "expect-archive"
local id = redis.call('HGET', KEYS[1], ARGV[1])
if not id then return false end
local key = ARGV[4] .. id
local state = redis.call('HGET', key, 'state')
if state == 'open' or state == 'overdue' then
  redis.call('HSET', key, 'state', 'met', 'metBy', ARGV[2], 'metAt', ARGV[3], 'updatedAt', ARGV[3])
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
  archiveExpectation(KEYS[4], key)
  return { id, 'met', state }
end
if state == 'missing_notification' or state == 'unresolved' then
  if redis.call('HSETNX', key, 'lateEventId', ARGV[2]) == 1 then
    redis.call('HSET', key, 'lateAt', ARGV[3], 'updatedAt', ARGV[3])
    archiveExpectation(KEYS[4], key)
    return { id, 'late', state }
  end
end
return { id, 'none', state or '' }
