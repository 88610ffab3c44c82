--[[
  Adds an expectation, unless one for the same environment, event type and request_id is still open
  (then that one is returned) or as many as allowed are open already.

    Input:
      KEYS[1] the new expectation's hash
      KEYS[2] open expectations (zset, by due time)
      KEYS[3] due expectations (zset, by the time of their next step)
      KEYS[4] every kept expectation (zset, by creation time)
      KEYS[5] the match hash (`<environment> <event type> <request_id>` -> id)
      KEYS[6] the request_id's set of expectation ids
      ARGV[1] the most open at once
      ARGV[2] the match field
      ARGV[3] the new id
      ARGV[4] its due time (ms)
      ARGV[5] its creation time (ms)
      ARGV[6] the prefix of an expectation's hash (the id follows it; same hash tag as the KEYS)
      ARGV[7..] the new hash's fields and values
    Output:
      { 'created', id } | { 'exists', id of the open one } | { 'full', '' }
]]
local existing = redis.call('HGET', KEYS[5], ARGV[2])
if existing then
  local state = redis.call('HGET', ARGV[6] .. existing, 'state')
  if state == 'open' or state == 'overdue' then return { 'exists', existing } end
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[1]) then return { 'full', '' } end
redis.call('HSET', KEYS[1], unpack(ARGV, 7))
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[3])
redis.call('HSET', KEYS[5], ARGV[2], ARGV[3])
redis.call('SADD', KEYS[6], ARGV[3])
return { 'created', ARGV[3] }
