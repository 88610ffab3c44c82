--[[
  Where a delivery stands in its key's sequence (0: it heads it; -1: not in it) and which one heads it.

    Input:
      KEYS[1] the sequence
      ARGV[1] the event id
    Output:
      {position or -1, the event id heading the sequence}
]]
local pos = redis.call('LPOS', KEYS[1], ARGV[1])
return {pos or -1, redis.call('LINDEX', KEYS[1], 0)}
