--[[
  Adds fields to a kept expectation (what became of it after it settled); nothing when it is gone.

    Input:
      KEYS[1] the expectation's hash
      KEYS[2] the archive stream, with the archive on (absent when off)
      ARGV[1..] fields and values
    Output:
      1 noted, 0 gone
]]
--- @include "expect-archive"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
archiveExpectation(KEYS[2], KEYS[1])
return 1
