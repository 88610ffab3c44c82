/// <reference path="./bullmq-scripts.d.ts" />
// (referenced, not only included, so that ts-node, which loads what is imported, sees it too)
import { Job, type IRedisTransaction, type JobsOptions, type Queue } from 'bullmq';
import { addStandardJob } from 'bullmq/dist/cjs/scripts/addStandardJob-9';
import type { Result } from 'ioredis';
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
 * add script (the exact one `queue.add` runs, shipped resolved in the package) is embedded as a local
 * function and called once per job, so each job it writes is a normal BullMQ job byte for byte. The
 * de-duplication record and the binding are written last: a script that fails part-way stops before
 * them, so neither is ever remembered without the jobs that answer for it, and a retried add finds
 * the jobs already there (their ids derive from the event id) instead of doubling them.
 *
 * KEYS[1] the replay key; KEYS[2] our de-duplication record and KEYS[3] the record the earlier layout
 * left (BullMQ's, in the event type's queue, until its window ends), both the replay key again when
 * BullMQ's own de-duplication (in the add's options) decides; then the request-index buckets; then
 * each add's keys.
 * ARGV[1] what the replay key is bound to (the event type); ARGV[2] the binding's TTL in ms;
 * ARGV[3] '1' when a key bound to another value is refused (legacy) rather than a replay;
 * ARGV[4] '1' when KEYS[2] and KEYS[3] are ours to check (and KEYS[2] to write); ARGV[5] the record's
 * TTL in ms; ARGV[6] the event id (the index's value); ARGV[7] when the index buckets expire (ms since
 * 1970); ARGV[8] the number of buckets; ARGV[9] the number of adds; ARGV[10] the number of keys of an
 * add; ARGV[11..10 + buckets] the request id of each bucket; ARGV[11 + buckets] the number of
 * arguments of an add; then each add's arguments (all adds have the same shape).
 */
const INGEST_LUA = `
local function bullAdd(KEYS, ARGV)
${addStandardJob.content}
end
local bound = redis.call('GET', KEYS[1])
if bound then
  if ARGV[3] == '1' and bound ~= ARGV[1] then return {'signature_reused'} end
  return {'replay'}
end
local own = ARGV[4] == '1'
if own and redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {'duplicate'}
end
local buckets = tonumber(ARGV[8])
local adds = tonumber(ARGV[9])
local nkeys = tonumber(ARGV[10])
local nargs = tonumber(ARGV[11 + buckets])
local k = 4 + buckets
local a = 12 + buckets
local first
for i = 1, adds do
  local jobId = bullAdd({unpack(KEYS, k, k + nkeys - 1)}, {unpack(ARGV, a, a + nargs - 1)})
  if type(jobId) == 'number' then return {'error', tostring(jobId)} end
  first = first or jobId
  k = k + nkeys
  a = a + nargs
end
if own then redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[5]) end
for i = 1, buckets do
  local key = KEYS[3 + i]
  local field = ARGV[10 + i]
  local ids = redis.call('HGET', key, field)
  if not ids then
    redis.call('HSET', key, field, ARGV[6])
  elseif not string.find(',' .. ids .. ',', ',' .. ARGV[6] .. ',', 1, true) then
    redis.call('HSET', key, field, ids .. ',' .. ARGV[6])
  end
  redis.call('PEXPIREAT', key, ARGV[7])
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {'added', first or ''}
`;

/**
 * `added`: the jobs are stored (jobId: the first one's, or with BullMQ's de-duplication the job
 * already standing for the event); `duplicate`: our de-duplication record knows the event.
 */
export type IngestDecision = { kind: 'added'; jobId: string } | { kind: 'duplicate' } | { kind: 'replay' } | { kind: 'signature_reused' };

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

export interface JobToAdd<D, N extends string> {
  name: N;
  data: D;
  opts: JobsOptions & { jobId: string };
}

/** One job for one queue; the script adds them in order. */
export interface AddTo {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a queue of any job type
  queue: Queue<any, any, string>;
  job: JobToAdd<unknown, string>;
}

/** Everything one notification writes. */
export interface Ingestion {
  /** At least one. */
  adds: AddTo[];
  binding: ReplayBinding;
  /**
   * Our de-duplication record of the event, and the earlier layout's record that also counts (absent
   * when an add's own BullMQ de-duplication decides).
   */
  dedup?: { key: string; earlierKey: string; ttlMs: number };
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
      if (!results || failed) throw failed ?? new Error('the ingest pipeline was not run');
      reply = results[0]?.[1] as string[];
      replicas = Number(results[2]?.[1]);
    }
    const [kind, detail] = reply;
    if (kind === 'added' && detail) return { kind, jobId: detail, replicas };
    if (kind === 'replay' || kind === 'signature_reused' || kind === 'duplicate') return { kind, replicas };
    throw new Error(`the add was refused (BullMQ code ${detail ?? 'none'})`);
  };
}

/** The script's keys and arguments, laid out as INGEST_LUA reads them. */
async function scriptArgs({ adds, binding, dedup, eventId, index }: Ingestion): Promise<(string | Buffer | number)[]> {
  if (adds.length === 0) throw new Error('an ingestion adds at least one job');
  const recorded = await Promise.all(adds.map(({ queue, job }) => recordAdd(queue, job)));
  const nkeys = addStandardJob.keys;
  const nargs = recorded[0]!.length - nkeys;
  if (recorded.some((r) => r.length !== nkeys + nargs)) throw new Error('BullMQ recorded adds of different shapes for one notification');
  const entries = index?.entries ?? [];
  const keys = [binding.key, dedup?.key ?? binding.key, dedup?.earlierKey ?? binding.key, ...entries.map((e) => e.key), ...recorded.flatMap((r) => r.slice(0, nkeys))];
  const argv = [
    binding.value,
    String(binding.ttlMs),
    binding.exclusive ? '1' : '0',
    dedup ? '1' : '0',
    String(dedup?.ttlMs ?? 0),
    eventId,
    String(index?.expiresAtMs ?? 0),
    String(entries.length),
    String(adds.length),
    String(nkeys),
    ...entries.map((e) => e.requestId),
    String(nargs),
    ...recorded.flatMap((r) => r.slice(nkeys)),
  ];
  return [keys.length, ...keys, ...argv];
}

/**
 * The keys and arguments BullMQ's add script gets for this job, taken from BullMQ itself: a Job
 * built as `queue.add` builds it, added through its public `addJob(transaction)` into a
 * transaction that records the call instead of sending it.
 */
async function recordAdd<D, R, N extends string>(queue: Queue<D, R, N>, { name, data, opts }: JobToAdd<D, N>): Promise<(string | Buffer)[]> {
  const job = new Job<D, R, N>(queue, name, data, { ...queue.defaultJobOptions, ...opts }, opts.jobId);
  const recorder = new RecordingTransaction();
  await job.addJob(recorder);
  const recorded = recorder.recorded;
  if (!recorded || recorded.name.split(':')[0] !== addStandardJob.name) {
    throw new Error(`BullMQ chose ${recorded?.name ?? 'no script'} for this add; the ingest script embeds ${addStandardJob.name} only (no delay, priority or parent)`);
  }
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
