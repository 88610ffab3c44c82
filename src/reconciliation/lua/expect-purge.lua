--[[
  Removes settled expectations created before the cutoff (open and overdue ones stay, whatever their age).

    Input:
      KEYS[1] every kept expectation (zset, by creation time)
      KEYS[2] the match hash
      ARGV[1] the cutoff (ms)
      ARGV[2] the most to look at
      ARGV[3] the prefix of an expectation's hash
      ARGV[4] the prefix of a request_id's set (same hash tag as the KEYS)
    Output:
      how many were removed
]]
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local removed = 0
for _, id in ipairs(ids) do
  local key = ARGV[3] .. id
  local f = redis.call('HMGET', key, 'state', 'environment', 'eventType', 'requestId')
  if f[1] ~= 'open' and f[1] ~= 'overdue' then
    if f[4] then
      local field = f[2] .. ' ' .. f[3] .. ' ' .. f[4]
      if redis.call('HGET', KEYS[2], field) == id then redis.call('HDEL', KEYS[2], field) end
      redis.call('SREM', ARGV[4] .. f[4], id)
    end
    redis.call('DEL', key)
    redis.call('ZREM', KEYS[1], id)
    removed = removed + 1
  end
end
return removed
