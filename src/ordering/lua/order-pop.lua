--[[
  Takes the event off the head of its sequence, if it is the head, unblocks the key, and wakes the
  delivery that heads the sequence now if it is parked (BullMQ's own promote script, embedded as a
  local function, as `job.promote()` runs it); answers whether it popped and which event heads the
  sequence now. An empty sequence is gone (Redis removes an empty list), so a key costs nothing once
  its deliveries are done.

    Input:
      KEYS[1] the sequence
      KEYS[2] the target's blocked keys
      KEYS[3..11] promote's keys, when given
      ARGV[1] the event id
      ARGV[2] the key value
      ARGV[3] the queue's key prefix (promote's ARGV[1])
    Output:
      {1 if it popped else 0, the event id heading the sequence now}
]]
local function bullPromote(KEYS, ARGV)
--- @include "bullmq:promote"
end
local popped = 0
if redis.call('LINDEX', KEYS[1], 0) == ARGV[1] then
  redis.call('LPOP', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[2])
  popped = 1
end
local head = redis.call('LINDEX', KEYS[1], 0)
if head and #KEYS > 2 then bullPromote({unpack(KEYS, 3)}, {ARGV[3], head}) end
return {popped, head}
