--[[
  One script call decides and stores a notification: the replay check, de-duplication, every job
  the notification needs (one delivery job per target that takes it, or the event job when none
  does, or the quarantine job), the request-id index and the binding of its replay key. BullMQ's own
  add scripts (the exact ones `queue.add` runs, shipped resolved in the package) are embedded as local
  functions and called once per job, so each job written is a normal BullMQ job byte for byte. The
  de-duplication record and the binding are written last: a script that fails part-way stops before
  them, so neither is ever remembered without the jobs that answer for it, and a retried add finds
  the jobs already there (their ids derive from the event id) instead of doubling them.

  A delivery for a target with ordered delivery joins its key's sequence (a list of event ids, in
  the order the script runs, which is receipt order across every receiver); it is added to wait
  only when it heads the sequence, and otherwise parked (delayed) until the delivery before it is done
  (see ordering/sequencer.ts).

  KEYS: [1] the replay key; [2] our de-duplication record, the replay key again when BullMQ's own
  de-duplication (in the add's options) decides; [3..2 + buckets] the request-index buckets; then for
  each add: (ordered only: its sequence) its keys (ordered only: the parked variant's keys).
  ARGV: [1] what the replay key is bound to (the event type); [2] the binding's TTL in ms; [3] '1' when
  a key bound to another value is refused (legacy) rather than a replay, '-' when the replay key is
  neither checked nor bound (a copy kept after its key was found bound elsewhere); [4] '1' when
  KEYS[2] is ours to check and write; [5] the record's TTL in ms; [6] the
  event id; [7] when the index buckets expire (ms since 1970); [8] buckets; [9] adds; [10] what the
  record holds: `m:` and the event's `X-Merch-Id`, so a later copy under another one is a conflict,
  not a duplicate; [11..10 + buckets] each bucket's request id; then for each add: its mode ('now'
  or 'ordered'), its number of keys and of arguments (ordered: then the parked variant's), its
  arguments (ordered: then the parked variant's).
]]

local function bullAdd(KEYS, ARGV)
--- @include "bullmq:addStandardJob"
end
local function bullAddParked(KEYS, ARGV)
--- @include "bullmq:addDelayedJob"
end
local binds = ARGV[3] ~= '-'
if binds then
  local bound = redis.call('GET', KEYS[1])
  if bound then
    if ARGV[3] == '1' and bound ~= ARGV[1] then return {'signature_reused', bound} end
    return {'replay'}
  end
end
local own = ARGV[4] == '1'
if own and redis.call('EXISTS', KEYS[2]) > 0 then
  if binds then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
  local first = redis.call('GET', KEYS[2])
  if first and string.sub(first, 1, 2) == 'm:' and first ~= ARGV[10] then return {'conflict', string.sub(first, 3)} end
  return {'duplicate'}
end
local eventId = ARGV[6]
local buckets = tonumber(ARGV[8])
local adds = tonumber(ARGV[9])
local k = 3 + buckets
local a = 11 + buckets
local function keys(n) local t = {unpack(KEYS, k, k + n - 1)}; k = k + n; return t end
local function args(n) local t = {unpack(ARGV, a, a + n - 1)}; a = a + n; return t end
local function num() local v = tonumber(ARGV[a]); a = a + 1; return v end
local first
for i = 1, adds do
  local mode = ARGV[a]
  a = a + 1
  local jobId
  if mode == 'ordered' then
    local sequence = keys(1)[1]
    local nk, na, pk, pa = num(), num(), num(), num()
    local nowKeys, parkedKeys = keys(nk), keys(pk)
    local nowArgs, parkedArgs = args(na), args(pa)
    if not redis.call('LPOS', sequence, eventId) then redis.call('RPUSH', sequence, eventId) end
    if redis.call('LINDEX', sequence, 0) == eventId then
      jobId = bullAdd(nowKeys, nowArgs)
    else
      jobId = bullAddParked(parkedKeys, parkedArgs)
    end
  else
    local nk, na = num(), num()
    jobId = bullAdd(keys(nk), args(na))
  end
  if type(jobId) == 'number' then return {'error', tostring(jobId)} end
  first = first or jobId
end
if own then redis.call('SET', KEYS[2], ARGV[10], 'PX', ARGV[5]) end
for i = 1, buckets do
  local key = KEYS[2 + i]
  local field = ARGV[10 + i]
  local ids = redis.call('HGET', key, field)
  if not ids then
    redis.call('HSET', key, field, eventId)
  elseif not string.find(',' .. ids .. ',', ',' .. eventId .. ',', 1, true) then
    redis.call('HSET', key, field, ids .. ',' .. eventId)
  end
  redis.call('PEXPIREAT', key, ARGV[7])
end
if binds then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
return {'added', first or ''}
