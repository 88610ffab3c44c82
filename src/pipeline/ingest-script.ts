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
 * One script call decides and stores a notification: the replay check, the binding of its replay
 * key, BullMQ's de-duplication and the add. BullMQ's own add script (the exact one `queue.add`
 * runs, shipped resolved in the package) is embedded as a local function, so the job it writes is
 * a normal BullMQ job byte for byte. The binding is written last: a script that fails part-way
 * stops before it, so a replay key is never remembered without the job (or the earlier event) that
 * answers for it.
 *
 * KEYS[1] the replay key; KEYS[2..] addStandardJob's keys.
 * ARGV[1] what the replay key is bound to (the event type); ARGV[2] the binding's TTL in ms;
 * ARGV[3] '1' when a key bound to another value is refused (legacy) rather than a replay;
 * ARGV[4..] addStandardJob's arguments.
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
local jobId = bullAdd({unpack(KEYS, 2)}, {unpack(ARGV, 4)})
if type(jobId) == 'number' then return {'error', tostring(jobId)} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {'added', jobId}
`;

/** `added`: the job now standing for the event, ours or (a duplicate) an earlier request's. */
export type IngestDecision = { kind: 'added'; jobId: string } | { kind: 'replay' } | { kind: 'signature_reused' };

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

export type IngestScript = <D, R, N extends string>(
  queue: Queue<D, R, N>,
  job: JobToAdd<D, N>,
  binding: ReplayBinding,
  confirm?: ReplicaConfirmation,
) => Promise<IngestDecision & { replicas?: number }>;

/** Loads the ingest script on the connection (EVALSHA, loaded once) and returns its runner. */
export function defineIngestScript(connection: RedisClient): IngestScript {
  connection.defineCommand('webhookIngest', { lua: INGEST_LUA });
  return async (queue, job, binding, confirm) => {
    const add = await recordAdd(queue, job);
    const keys = add.slice(0, addStandardJob.keys);
    const argv = add.slice(addStandardJob.keys);
    const exclusive = binding.exclusive ? '1' : '0';
    const args = [1 + keys.length, binding.key, ...keys, binding.value, String(binding.ttlMs), exclusive, ...argv] as const;
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
    if (kind === 'replay' || kind === 'signature_reused') return { kind, replicas };
    throw new Error(`the add was refused (BullMQ code ${detail ?? 'none'})`);
  };
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
