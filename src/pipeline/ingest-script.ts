/// <reference path="./bullmq-scripts.d.ts" />
// (referenced, not only included, so that ts-node, which loads what is imported, sees it too)
import { Job, type IRedisTransaction, type JobsOptions, type Queue } from 'bullmq';
import { addStandardJob } from 'bullmq/dist/cjs/scripts/addStandardJob-9';
import type { Redis, Result } from 'ioredis';

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

export type IngestScript = <D, R, N extends string>(queue: Queue<D, R, N>, job: JobToAdd<D, N>, binding: ReplayBinding) => Promise<IngestDecision>;

/** Loads the ingest script on the connection (EVALSHA, loaded once) and returns its runner. */
export function defineIngestScript(connection: Redis): IngestScript {
  connection.defineCommand('webhookIngest', { lua: INGEST_LUA });
  return async (queue, job, binding) => {
    const add = await recordAdd(queue, job);
    const keys = add.slice(0, addStandardJob.keys);
    const argv = add.slice(addStandardJob.keys);
    const exclusive = binding.exclusive ? '1' : '0';
    const reply = await connection.webhookIngest(1 + keys.length, binding.key, ...keys, binding.value, String(binding.ttlMs), exclusive, ...argv);
    const [kind, detail] = reply;
    if (kind === 'added' && detail) return { kind, jobId: detail };
    if (kind === 'replay' || kind === 'signature_reused') return { kind };
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
