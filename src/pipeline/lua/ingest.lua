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

  A later copy of an event the record knows is counted beside the record, in the event's copies hash
  (fields `duplicates`, `replays`, `lastAt` in ms since 1970), which is given the record's remaining
  TTL so the two expire together. Only those branches touch it: the first receipt runs no command for
  it. A replay is counted only when its binding names this very event: the key is bound to the event
  type and the event id (`<type> <event id>`), so a replay key carrying another body than the first
  (another event id) is counted on neither event (this script cannot reach the first event's keys).
  A binding written before the event id was part of it (no space) is not counted either.

  With the archive on, every acknowledging decision (added, duplicate, conflict, replay) also appends
  the producer's archive record to the archive stream, with the decision and the first job id: the
  record is stored with the jobs or not at all, so the archive misses nothing that was acknowledged.

  A notification newly added that an expectation may wait for (ARGV[11], the expectation match field
  of its environment, type and request_id) is looked up in the expectation match hash: the answer
  names `expected` when one is kept for it, so the caller runs the expectation's own script only then
  (one HEXISTS here, instead of a second call for every notification).

  KEYS: [1] the replay key; [2] our de-duplication record, the replay key again when BullMQ's own
  de-duplication (in the add's options) decides; [3] the event's copies hash (the replay key again
  when [2] is not ours); [4] the expectation match hash (the replay key again when ARGV[11] is '');
  [5..4 + buckets] the request-index buckets; then for each add: (ordered only: its sequence) its keys
  (ordered only: the parked variant's keys).
  ARGV: [1] the event type (the replay key is bound to it and the event id); [2] the binding's TTL in ms; [3] '1' when
  a key bound to another value is refused (legacy) rather than a replay, '-' when the replay key is
  neither checked nor bound (a copy kept after its key was found bound elsewhere); [4] '1' when
  KEYS[2] is ours to check and write; [5] the record's TTL in ms; [6] the
  event id; [7] when the index buckets expire (ms since 1970); [8] buckets; [9] adds; [10] what the
  record holds: `m:` and the event's `X-Merch-Id`, so a later copy under another one is a conflict,
  not a duplicate; [11] the expectation match field ('' when none); [12..11 + buckets] each bucket's
  request id; then for each add: its mode ('now'
  or 'ordered'), its number of keys and of arguments (ordered: then the parked variant's), its
  arguments (ordered: then the parked variant's). Last of all: ARGV[#ARGV - 1] where the first add's job
  data is in ARGV, and ARGV[#ARGV] the archive record ('' when the archive is off), and then KEYS[#KEYS]
  is the archive stream. The archive entry holds the record (what the job does not: the verifying
  key's fingerprint, the replay key, the signed timestamp...) and the job data as the add wrote it
  (the body and headers as received), so the body crosses the network once.
]]

local function bullAdd(KEYS, ARGV)
--- @include "bullmq:addStandardJob"
end
local function bullAddParked(KEYS, ARGV)
--- @include "bullmq:addDelayedJob"
end
local binds = ARGV[3] ~= '-'
local own = ARGV[4] == '1'
local eventId = ARGV[6]
local binding = ARGV[1] .. ' ' .. eventId
local archiveRecord = ARGV[#ARGV]
local function archive(decision, jobId)
  if archiveRecord == '' then return end
  redis.call('XADD', KEYS[#KEYS], '*', 'd', decision, 'j', jobId or '', 'r', archiveRecord,
    'b', ARGV[tonumber(ARGV[#ARGV - 1])])
end
-- A later copy: counted in the copies hash, which expires with the record.
local function countCopy(field)
  local ttl = redis.call('PTTL', KEYS[2])
  if ttl <= 0 then return end
  local time = redis.call('TIME')
  redis.call('HINCRBY', KEYS[3], field, 1)
  redis.call('HSET', KEYS[3], 'lastAt', tostring(time[1] * 1000 + math.floor(time[2] / 1000)))
  redis.call('PEXPIRE', KEYS[3], ttl)
end
if binds then
  local bound = redis.call('GET', KEYS[1])
  if bound then
    local space = string.find(bound, ' ', 1, true)
    -- A binding written before bindings named the event id holds the type alone (no space). Such
    -- bindings expire with their TTL (ARGV[2]): this fallback goes once every deployment has run a
    -- version writing '<type> <event id>' for longer than that.
    local boundType = space and string.sub(bound, 1, space - 1) or bound
    if ARGV[3] == '1' and boundType ~= ARGV[1] then return {'signature_reused', boundType} end
    if own and space and string.sub(bound, space + 1) == eventId then countCopy('replays') end
    archive('replay')
    return {'replay'}
  end
end
if own and redis.call('EXISTS', KEYS[2]) > 0 then
  if binds then redis.call('SET', KEYS[1], binding, 'PX', ARGV[2]) end
  local first = redis.call('GET', KEYS[2])
  -- A record without the `m:` prefix was written before records held the X-Merch-Id: it cannot tell a
  -- conflict, so it counts as a duplicate. Records expire with their TTL (ARGV[5]): the prefix test goes
  -- once every deployment has run a version writing `m:` for longer than that.
  if first and string.sub(first, 1, 2) == 'm:' and first ~= ARGV[10] then
    archive('conflict')
    return {'conflict', string.sub(first, 3)}
  end
  countCopy('duplicates')
  archive('duplicate')
  return {'duplicate'}
end
local buckets = tonumber(ARGV[8])
local adds = tonumber(ARGV[9])
local k = 5 + buckets
local a = 12 + buckets
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
  local key = KEYS[4 + i]
  local field = ARGV[11 + i]
  local ids = redis.call('HGET', key, field)
  if not ids then
    redis.call('HSET', key, field, eventId)
  elseif not string.find(',' .. ids .. ',', ',' .. eventId .. ',', 1, true) then
    redis.call('HSET', key, field, ids .. ',' .. eventId)
  end
  redis.call('PEXPIREAT', key, ARGV[7])
end
if binds then redis.call('SET', KEYS[1], binding, 'PX', ARGV[2]) end
archive('added', first)
if ARGV[11] ~= '' and redis.call('HEXISTS', KEYS[4], ARGV[11]) == 1 then return {'added', first or '', 'expected'} end
return {'added', first or ''}
