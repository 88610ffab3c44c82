--[[
  Included by the expectation scripts that change an expectation: with the archive on (its stream
  given), the expectation's fields after the change go to the archive stream, the change numbered in
  its `rev` field so the archive keeps the newest and every change once.
]]
local function archiveExpectation(stream, key)
  if not stream then return end
  redis.call('HINCRBY', key, 'rev', 1)
  local flat = redis.call('HGETALL', key)
  local record = {}
  for i = 1, #flat, 2 do record[flat[i]] = flat[i + 1] end
  redis.call('XADD', stream, '*', 'd', 'expectation', 'r', cjson.encode(record))
end
