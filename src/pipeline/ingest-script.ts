import path from 'node:path';
import { Job, type IRedisTransaction, type JobsOptions, type Queue } from 'bullmq';
import { bullmqScript } from '../redis/bullmq-scripts';
import { loadLua } from '../redis/lua';
import { Cluster, type Result } from 'ioredis';
import { coalesceWritesThisTurn } from '../redis/coalesce-writes';
import type { RedisClient } from '../redis/connect';

const addStandardJob = bullmqScript('addStandardJob');
const addDelayedJob = bullmqScript('addDelayedJob');

declare module 'ioredis' {
  interface RedisCommander<Context> {
    webhookIngest(...args: (string | Buffer | number)[]): Result<string[], Context>;
  }
}

/**
 * One script call decides and stores a notification (lua/ingest.lua, whose header says what it does
 * and lays out its KEYS and ARGV): the replay check, de-duplication, every job it needs, the
 * request-id index and the binding of its replay key. BullMQ's own add scripts are embedded in it as
 * local functions, so each job written is a normal BullMQ job byte for byte.
 */
const INGEST_LUA = loadLua(path.join(__dirname, 'lua'), 'ingest', {
  'bullmq:addStandardJob': addStandardJob.content,
  'bullmq:addDelayedJob': addDelayedJob.content,
});

/**
 * `added`: the jobs are stored (jobId: the first one's, or with BullMQ's de-duplication the job
 * already standing for the event; `expected` when an expectation is kept under the ingestion's match
 * field); `duplicate`: our de-duplication record knows the event;
 * `conflict`: it knows the event under another `X-Merch-Id` (the first one's, empty for none);
 * `signature_reused`: the legacy signature is bound to another event type (`boundTo`).
 */
export type IngestDecision =
  | { kind: 'added'; jobId: string; expected?: true }
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
  /**
   * The event type; the script binds the key to it and the event id (`<type> <event id>`), so a later replay can tell
   * whether it carries the same event.
   */
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
  /** A queue of any job type: the add is recorded from BullMQ itself, whatever the data. */
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
   * Our de-duplication record of the event and what it holds (see ARGV[10]), and the hash that counts
   * the event's later copies (written only when one arrives); absent when an add's own BullMQ
   * de-duplication decides.
   */
  dedup?: { key: string; ttlMs: number; value: string; copiesKey: string };
  eventId: string;
  /** Request-index buckets (request id -> event ids) to add the event id to, and when they expire. */
  index?: { expiresAtMs: number; entries: { key: string; requestId: string }[] };
  /** With the archive on: its stream, and the record appended to it with whatever the script decides. */
  archive?: { stream: string; record: string };
  /**
   * The expectation match hash and the field a newly added notification would meet an expectation under: the
   * script answers whether one is kept there.
   */
  expectation?: { key: string; field: string };
}

export type IngestScript = (
  ingestion: Ingestion,
  confirm?: ReplicaConfirmation,
) => Promise<IngestDecision & { replicas?: number }>;

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
    const [kind, detail, expected] = reply;
    if (kind === 'added' && detail)
      return expected === 'expected'
        ? { kind, jobId: detail, expected: true, replicas }
        : { kind, jobId: detail, replicas };
    if (kind === 'replay' || kind === 'duplicate') return { kind, replicas };
    if (kind === 'conflict') return { kind, firstMerchantId: detail ?? '', replicas };
    if (kind === 'signature_reused') return { kind, boundTo: detail ?? '', replicas };
    throw new Error(`the add was refused (BullMQ code ${detail ?? 'none'})`);
  };
}

/** The script's keys and arguments, laid out as INGEST_LUA reads them. */
async function scriptArgs({
  adds,
  binding,
  dedup,
  eventId,
  index,
  archive,
  expectation,
}: Ingestion): Promise<(string | Buffer | number)[]> {
  if (adds.length === 0) throw new Error('an ingestion adds at least one job');
  const entries = index?.entries ?? [];
  const keys: (string | Buffer)[] = [
    binding.key,
    dedup?.key ?? binding.key,
    dedup?.copiesKey ?? binding.key,
    expectation?.key ?? binding.key,
    ...entries.map((e) => e.key),
  ];
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
    expectation?.field ?? '',
    ...entries.map((e) => e.requestId),
  ];
  const recorded = await Promise.all(
    adds.map(async ({ queue, job, ordered }) => ({
      ordered,
      now: await recordAdd(queue, job, addStandardJob),
      parked: ordered
        ? await recordAdd(queue, { ...job, opts: { ...job.opts, delay: ordered.parkMs } }, addDelayedJob)
        : undefined,
    })),
  );
  /** Where (ARGV, from 1) the first add's job data is: the archive entry takes the body and headers from it. */
  let firstData = 0;
  for (const { ordered, now, parked } of recorded) {
    const nowKeys = now.slice(0, addStandardJob.keys);
    const nowArgs = now.slice(addStandardJob.keys);
    // BullMQ's add scripts take [packed arguments, the job data as JSON, packed options].
    if (firstData === 0) {
      if (typeof nowArgs[1] !== 'string' || !nowArgs[1].startsWith('{'))
        throw new Error("BullMQ's add script no longer takes the job data second; the archive entry reads it there");
      firstData = argv.length + (ordered && parked ? 5 : 3) + 2;
    }
    if (ordered && parked) {
      const parkedKeys = parked.slice(0, addDelayedJob.keys);
      const parkedArgs = parked.slice(addDelayedJob.keys);
      keys.push(ordered.sequenceKey, ...nowKeys, ...parkedKeys);
      argv.push(
        'ordered',
        String(nowKeys.length),
        String(nowArgs.length),
        String(parkedKeys.length),
        String(parkedArgs.length),
        ...nowArgs,
        ...parkedArgs,
      );
    } else {
      keys.push(...nowKeys);
      argv.push('now', String(nowKeys.length), String(nowArgs.length), ...nowArgs);
    }
  }
  if (archive) keys.push(archive.stream);
  argv.push(archive ? String(firstData) : '', archive?.record ?? '');
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
    throw new Error(
      `BullMQ chose ${recorded?.name ?? 'no script'} for this add; the ingest script embeds ${expected.name} for it ` +
        `(no priority or parent)`,
    );
  }
  if (recorded.args.length < expected.keys)
    throw new Error(`BullMQ gave ${expected.name} fewer than its ${expected.keys} keys`);
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
