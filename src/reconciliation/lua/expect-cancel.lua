--[[
  Cancels an open or overdue expectation: no inquiry about it from now on.

    Input:
      KEYS[1] the expectation's hash
      KEYS[2] due expectations
      KEYS[3] open expectations
      KEYS[4] the archive stream, with the archive on (absent when off)
      ARGV[1] its id
      ARGV[2] now (ms)
      ARGV[3] who cancelled it
    Output:
      'done' | 'not_found' | the state it is in (not open, so not cancelled now)
]]
--- @include "expect-archive"
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 'not_found' end
if state ~= 'open' and state ~= 'overdue' then return state end
redis.call('HSET', KEYS[1], 'state', 'cancelled', 'cancelledBy', ARGV[3], 'updatedAt', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
archiveExpectation(KEYS[4], KEYS[1])
return 'done'
