--[[
  Adds an expectation, unless one for the same environment, event type and request_id is still open
  (then that one is returned) or as many as allowed are open already. A new one comes back with what
  the request-id index holds for its request_id: the notifications that arrived before it (a
  notification arriving after it finds it through the match hash, in the ingest script), for the
  caller to tell which of them, if any, meets it.

    Input:
      KEYS[1] the new expectation's hash
      KEYS[2] open expectations (zset, by due time)
      KEYS[3] due expectations (zset, by the time of their next step)
      KEYS[4] every kept expectation (zset, by creation time)
      KEYS[5] the match hash (`<environment> <event type> <request_id>` -> id)
      KEYS[6] the request_id's set of expectation ids
      KEYS[7..6 + n] the request-index buckets of the request_id (every day in the de-duplication window)
      KEYS[7 + n] the archive stream, with the archive on (absent when off)
      ARGV[1] the most open at once
      ARGV[2] the match field
      ARGV[3] the new id
      ARGV[4] its due time (ms)
      ARGV[5] its creation time (ms)
      ARGV[6] the prefix of an expectation's hash (the id follows it; same hash tag as the KEYS)
      ARGV[7] n, the number of index buckets
      ARGV[8] the request_id
      ARGV[9..] the new hash's fields and values
    Output:
      { 'created', id, each index bucket's entry for the request_id (comma-separated event ids) }
      | { 'exists', id of the open one } | { 'full', '' }
]]
--- @include "expect-archive"
local existing = redis.call('HGET', KEYS[5], ARGV[2])
if existing then
  local state = redis.call('HGET', ARGV[6] .. existing, 'state')
  if state == 'open' or state == 'overdue' then return { 'exists', existing } end
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[1]) then return { 'full', '' } end
local buckets = tonumber(ARGV[7])
redis.call('HSET', KEYS[1], unpack(ARGV, 9))
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[3])
redis.call('HSET', KEYS[5], ARGV[2], ARGV[3])
redis.call('SADD', KEYS[6], ARGV[3])
archiveExpectation(KEYS[7 + buckets], KEYS[1])
local out = { 'created', ARGV[3] }
for i = 1, buckets do
  local ids = redis.call('HGET', KEYS[6 + i], ARGV[8])
  if ids then out[#out + 1] = ids end
end
return out
