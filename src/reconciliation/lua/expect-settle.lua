--[[
  Records what one claimed attempt found, if the expectation is still overdue on that attempt (a
  notification may have met it meanwhile, or a later claim taken over): asked again at a time, or
  settled (missing_notification, unresolved).

    Input:
      KEYS[1] the expectation's hash
      KEYS[2] due expectations
      KEYS[3] open expectations
      KEYS[4] the archive stream, with the archive on (absent when off)
      ARGV[1] its id
      ARGV[2] the attempt claimed
      ARGV[3] the state it takes: overdue (asked again at ARGV[4]), missing_notification, unresolved
      ARGV[4] when to ask again (ms), for overdue
      ARGV[5..] further fields and values to set
    Output:
      1 recorded, 0 not (no longer this attempt's)
]]
--- @include "expect-archive"
if redis.call('HGET', KEYS[1], 'state') ~= 'overdue' or redis.call('HGET', KEYS[1], 'attempt') ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], 'state', ARGV[3], unpack(ARGV, 5))
if ARGV[3] == 'overdue' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
end
archiveExpectation(KEYS[4], KEYS[1])
return 1
