/// <reference path="./bullmq-scripts.d.ts" />
// (referenced, not only included, so that ts-node, which loads what is imported, sees it too)
import { Job, type IRedisTransaction, type JobsOptions, type Queue } from 'bullmq';
import { addDelayedJob } from 'bullmq/dist/cjs/scripts/addDelayedJob-6';
import { addStandardJob } from 'bullmq/dist/cjs/scripts/addStandardJob-9';
import { Cluster, type Result } from 'ioredis';
import { coalesceWritesThisTurn } from '../redis/coalesce-writes';
import type { RedisClient } from '../redis/connect';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    webhookIngest(...args: (string | Buffer | number)[]): Result<string[], Context>;
  }
}

/**
 * One script call decides and stores a notification: the replay check, de-duplication, every job
 * the notification needs (one delivery job per target that takes it, or the event job when none
 * does, or the quarantine job), the request-id index and the binding of its replay key. BullMQ's own
 * add scripts (the exact ones `queue.add` runs, shipped resolved in the package) are embedded as local
 * functions and called once per job, so each job written is a normal BullMQ job byte for byte. The
 * de-duplication record and the binding are written last: a script that fails part-way stops before
 * them, so neither is ever remembered without the jobs that answer for it, and a retried add finds
 * the jobs already there (their ids derive from the event id) instead of doubling them.
 *
 * A delivery for a target with ordered delivery joins its key's sequence (a list of event ids, in
 * the order the script runs, which is receipt order across every receiver); it is added to wait
 * only when it heads the sequence, and otherwise parked (delayed) until the delivery before it is done
 * (see ordering/sequencer.ts).
 *
 * KEYS: [1] the replay key; [2] our de-duplication record and [3] the record the earlier layout left
 * (BullMQ's, in the event type's queue, until its window ends), both the replay key again when
 * BullMQ's own de-duplication (in the add's options) decides; [4..3 + buckets] the request-index
 * buckets; then for each add: (ordered only: its sequence) its keys (ordered only: the parked
 * variant's keys).
 * ARGV: [1] what the replay key is bound to (the event type); [2] the binding's TTL in ms; [3] '1' when
 * a key bound to another value is refused (legacy) rather than a replay, '-' when the replay key is
 * neither checked nor bound (a copy kept after its key was found bound elsewhere); [4] '1' when
 * KEYS[2] and KEYS[3] are ours to check (and KEYS[2] to write); [5] the record's TTL in ms; [6] the
 * event id; [7] when the index buckets expire (ms since 1970); [8] buckets; [9] adds; [10] what the
 * record holds: `m:` and the event's `X-Merch-Id`, so a later copy under another one is a conflict,
 * not a duplicate; [11..10 + buckets] each bucket's request id; then for each add: its mode ('now'
 * or 'ordered'), its number of keys and of arguments (ordered: then the parked variant's), its
 * arguments (ordered: then the parked variant's).
 */
const INGEST_LUA = `
local function bullAdd(KEYS, ARGV)
${addStandardJob.content}
end
local function bullAddParked(KEYS, ARGV)
${addDelayedJob.content}
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
if own and redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then
  if binds then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
  local first = redis.call('GET', KEYS[2])
  if first and string.sub(first, 1, 2) == 'm:' and first ~= ARGV[10] then return {'conflict', string.sub(first, 3)} end
  return {'duplicate'}
end
local eventId = ARGV[6]
local buckets = tonumber(ARGV[8])
local adds = tonumber(ARGV[9])
local k = 4 + buckets
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
  local key = KEYS[3 + i]
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
`;

/**
 * `added`: the jobs are stored (jobId: the first one's, or with BullMQ's de-duplication the job
 * already standing for the event); `duplicate`: our de-duplication record knows the event;
 * `conflict`: it knows the event under another `X-Merch-Id` (the first one's, empty for none);
 * `signature_reused`: the legacy signature is bound to another event type (`boundTo`).
 */
export type IngestDecision =
  | { kind: 'added'; jobId: string }
  | { kind: 'duplicate' }
  | { kind: 'replay' }
  | { kind: 'conflict'; firstMerchantId: string }
  | { kind: 'signature_reused'; boundTo: string };

/** Replicas that must hold the write before it counts (REDIS_MIN_REPLICAS_ACK), and how long WAIT may block. */
export interface ReplicaConfirmation {
  replicas: number;
  timeoutMs: number;
  /** A key of ours in the same slot, written just before WAIT (ownKeys.replicaMarker). */
  markerKey: string;
}

export interface ReplayBinding {
  /** The Redis key, under the queue prefix. */
  key: string;
  /** What the key is bound to: the event type. */
  value: string;
  ttlMs: number;
  /** A key already bound to another value is refused (`signature_reused`) instead of being a replay. */
  exclusive: boolean;
}

/** The replay key's part: bound (checked first, written last), or left alone. */
export type ReplayBindingMode = ReplayBinding | { key: string; none: true };

export interface JobToAdd<D, N extends string> {
  name: N;
  data: D;
  opts: JobsOptions & { jobId: string };
}

/**
 * One job for one queue; the script adds them in order. With `ordered`, the job joins that sequence
 * and is parked (added delayed by `parkMs`) unless it heads it.
 */
export interface AddTo {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a queue of any job type
  queue: Queue<any, any, string>;
  job: JobToAdd<unknown, string>;
  ordered?: { sequenceKey: string; parkMs: number };
}

/** Everything one notification writes. */
export interface Ingestion {
  /** At least one. */
  adds: AddTo[];
  binding: ReplayBindingMode;
  /**
   * Our de-duplication record of the event and what it holds (see ARGV[10]), and the earlier layout's
   * record that also counts (absent when an add's own BullMQ de-duplication decides).
   */
  dedup?: { key: string; earlierKey: string; ttlMs: number; value: string };
  eventId: string;
  /** Request-index buckets (request id -> event ids) to add the event id to, and when they expire. */
  index?: { expiresAtMs: number; entries: { key: string; requestId: string }[] };
}

export type IngestScript = (ingestion: Ingestion, confirm?: ReplicaConfirmation) => Promise<IngestDecision & { replicas?: number }>;

/** Loads the ingest script on the connection (EVALSHA, loaded once) and returns its runner. */
export function defineIngestScript(connection: RedisClient): IngestScript {
  connection.defineCommand('webhookIngest', { lua: INGEST_LUA });
  return async (ingestion, confirm) => {
    const args = await scriptArgs(ingestion);
    // Every notification handled in this turn of the event loop leaves in the same socket write.
    coalesceWritesThisTurn(connection);
    let reply: string[];
    let replicas: number | undefined;
    if (!confirm) {
      reply = await connection.webhookIngest(...args);
    } else {
      // One pipeline, so WAIT runs on the connection (and, in a cluster, the node) that ran the
      // script, right after it: a connection that broke in between fails the whole call.
      const results = await connection
        .pipeline()
        .webhookIngest(...args)
        .set(confirm.markerKey, '1')
        .call('WAIT', confirm.replicas, Math.max(1, Math.floor(confirm.timeoutMs))) // WAIT 0 would block for ever
        .exec();
      const failed = results?.find(([err]) => err)?.[0];
      // After a cluster failover the old master, now a replica, answers MOVED to the script and the
      // marker but an error to WAIT; ioredis follows a pipeline's redirection only when every command
      // got the same one, so it would send every later pipeline to that node again. Learn the new
      // owner of the slot now; this notification gets its 503 and the platform sends it again.
      if (failed?.message.startsWith('MOVED ') && connection instanceof Cluster) connection.refreshSlotsCache();
      if (!results || failed) throw failed ?? new Error('the ingest pipeline was not run');
      reply = results[0]?.[1] as string[];
      replicas = Number(results[2]?.[1]);
    }
    const [kind, detail] = reply;
    if (kind === 'added' && detail) return { kind, jobId: detail, replicas };
    if (kind === 'replay' || kind === 'duplicate') return { kind, replicas };
    if (kind === 'conflict') return { kind, firstMerchantId: detail ?? '', replicas };
    if (kind === 'signature_reused') return { kind, boundTo: detail ?? '', replicas };
    throw new Error(`the add was refused (BullMQ code ${detail ?? 'none'})`);
  };
}

/** The script's keys and arguments, laid out as INGEST_LUA reads them. */
async function scriptArgs({ adds, binding, dedup, eventId, index }: Ingestion): Promise<(string | Buffer | number)[]> {
  if (adds.length === 0) throw new Error('an ingestion adds at least one job');
  const entries = index?.entries ?? [];
  const keys: (string | Buffer)[] = [binding.key, dedup?.key ?? binding.key, dedup?.earlierKey ?? binding.key, ...entries.map((e) => e.key)];
  const bound = 'none' in binding ? undefined : binding;
  const argv: (string | Buffer)[] = [
    bound?.value ?? '',
    String(bound?.ttlMs ?? 0),
    bound ? (bound.exclusive ? '1' : '0') : '-',
    dedup ? '1' : '0',
    String(dedup?.ttlMs ?? 0),
    eventId,
    String(index?.expiresAtMs ?? 0),
    String(entries.length),
    String(adds.length),
    dedup?.value ?? '',
    ...entries.map((e) => e.requestId),
  ];
  const recorded = await Promise.all(
    adds.map(async ({ queue, job, ordered }) => ({
      ordered,
      now: await recordAdd(queue, job, addStandardJob),
      parked: ordered ? await recordAdd(queue, { ...job, opts: { ...job.opts, delay: ordered.parkMs } }, addDelayedJob) : undefined,
    })),
  );
  for (const { ordered, now, parked } of recorded) {
    const nowKeys = now.slice(0, addStandardJob.keys);
    const nowArgs = now.slice(addStandardJob.keys);
    if (ordered && parked) {
      const parkedKeys = parked.slice(0, addDelayedJob.keys);
      const parkedArgs = parked.slice(addDelayedJob.keys);
      keys.push(ordered.sequenceKey, ...nowKeys, ...parkedKeys);
      argv.push('ordered', String(nowKeys.length), String(nowArgs.length), String(parkedKeys.length), String(parkedArgs.length), ...nowArgs, ...parkedArgs);
    } else {
      keys.push(...nowKeys);
      argv.push('now', String(nowKeys.length), String(nowArgs.length), ...nowArgs);
    }
  }
  return [keys.length, ...keys, ...argv];
}

/**
 * The keys and arguments BullMQ's add script gets for this job, taken from BullMQ itself: a Job
 * built as `queue.add` builds it, added through its public `addJob(transaction)` into a
 * transaction that records the call instead of sending it.
 */
async function recordAdd<D, R, N extends string>(
  queue: Queue<D, R, N>,
  { name, data, opts }: JobToAdd<D, N>,
  expected: { name: string; keys: number },
): Promise<(string | Buffer)[]> {
  const job = new Job<D, R, N>(queue, name, data, { ...queue.defaultJobOptions, ...opts }, opts.jobId);
  const recorder = new RecordingTransaction();
  await job.addJob(recorder);
  const recorded = recorder.recorded;
  if (!recorded || recorded.name.split(':')[0] !== expected.name) {
    throw new Error(`BullMQ chose ${recorded?.name ?? 'no script'} for this add; the ingest script embeds ${expected.name} for it (no priority or parent)`);
  }
  if (recorded.args.length < expected.keys) throw new Error(`BullMQ gave ${expected.name} fewer than its ${expected.keys} keys`);
  return recorded.args;
}

/** Records the one script call of an add; anything else BullMQ might ask of it is a surprise. */
class RecordingTransaction implements IRedisTransaction {
  recorded?: { name: string; args: (string | Buffer)[] };

  runCommand(name: string, args: (string | Buffer)[]): this {
    if (this.recorded) throw new Error('BullMQ made a second script call for one add');
    this.recorded = { name, args };
    return this;
  }
  hgetall(): this {
    return unexpected('hgetall');
  }
  hset(): this {
    return unexpected('hset');
  }
  hscan(): this {
    return unexpected('hscan');
  }
  smembers(): this {
    return unexpected('smembers');
  }
  sscan(): this {
    return unexpected('sscan');
  }
  zrange(): this {
    return unexpected('zrange');
  }
  lrange(): this {
    return unexpected('lrange');
  }
  llen(): this {
    return unexpected('llen');
  }
  del(): this {
    return unexpected('del');
  }
  exec(): Promise<[Error | null, unknown][] | null> {
    return unexpected('exec');
  }
}

function unexpected(command: string): never {
  throw new Error(`BullMQ asked the add recorder for ${command}; the ingest script cannot embed it`);
}
