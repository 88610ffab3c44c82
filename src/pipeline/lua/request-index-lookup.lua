--[[
  The event ids the request-id index holds for one request id, over the buckets of every day still
  inside the de-duplication window.

    Input:
      KEYS[1..n] the request id's bucket of each day
      ARGV[1] the request id
    Output:
      each bucket's entry that exists: comma-separated event ids
]]
local out = {}
for i, key in ipairs(KEYS) do
  local ids = redis.call('HGET', key, ARGV[1])
  if ids then out[#out + 1] = ids end
end
return out
