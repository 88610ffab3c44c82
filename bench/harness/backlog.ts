import { randomBytes } from 'node:crypto';
import { keyPrefix } from '../../src/model/names';
import { EVENT_TABLE, type EventType } from '../../src/model/event-table';
import { eventJob, type Received } from '../../src/model/jobs';
import { eventIdFor } from '../../src/model/ids';
import { createPipeline } from '../../src/pipeline/pipeline';
import { createRedisConnector, type RedisClient } from '../../src/redis/connect';
import { parsePayload } from '../../src/receiving/parse-payload';
import { randomNonce } from '../../src/signing/sign';
import { createBaselineProducer } from '../subjects/baseline-producer';
import type { VerifiedRequest } from '../subjects/event-job';
import { uniqueSampleBody } from './bodies';
import { pipelineOptionsFor, serviceDefaults } from '../subjects/service-defaults';
import { ORDER_FIELD } from './workdir';
import { targetSchema, type Target } from '../../src/model/target-schema';

/** Queues one verified request; resolves false when it was not newly accepted. */
type Enqueue = (request: VerifiedRequest) => Promise<boolean>;

/**
 * The service's own pipeline (src/pipeline: its job, ids, options, de-duplication and fan-out), as the
 * receiver queues, with the targets of the worker that drains it.
 */
function servicePipeline(connection: RedisClient, prefix: string, targets: Target[]) {
  const pipeline = createPipeline(connection, { ...pipelineOptionsFor(serviceDefaults(), prefix), targets });
  const enqueue: Enqueue = async (r) => {
    const definition = EVENT_TABLE.find((e) => e.type === r.eventType)!;
    const parsed = parsePayload(definition, r.body.toString('utf8'));
    if (!parsed.ok) throw new Error(`backlog body does not parse: ${parsed.errors.join('; ')}`);
    const job = eventJob(receivedOf(r), parsed.payload);
    return (await pipeline.enqueueEvent(job, r.nonce)) === 'accepted';
  };
  return { enqueue, close: () => pipeline.close() };
}

/** What the receiver records of a verified request (bodies here are UTF-8 JSON, signed with the current scheme in production). */
function receivedOf(r: VerifiedRequest): Received {
  return {
    eventId: eventIdFor(r.eventType, 'production', r.body),
    eventType: r.eventType,
    receivedAt: new Date(r.receivedAtMs).toISOString(),
    path: r.path,
    timestamp: r.timestamp,
    nonce: r.nonce,
    scheme: 'current',
    environment: 'production',
    rawBody: r.body.toString('utf8'),
    rawBodyEncoding: 'utf8',
    ...(r.contentType !== undefined ? { contentType: r.contentType } : {}),
    signatureHeaders: r.signatureHeaders,
  };
}

/** The baselines' own producer, which the raw worker drains. */
function baselineProducer(connection: RedisClient, prefix: string) {
  // Under the service's key layout, where the raw worker (bench/subjects/raw-worker.ts) looks.
  const producer = createBaselineProducer(connection, keyPrefix(prefix));
  const enqueue: Enqueue = async (r) => {
    await producer.add(r);
    return true;
  };
  return { enqueue, close: () => producer.close() };
}

/**
 * Queues `count` events while no worker runs, so a drain starts from a full backlog: the service's
 * through its own pipeline, the raw worker's through the baseline producer. Signing is skipped
 * (workers never verify); the signature header gets a random value of the real length.
 */
export interface BacklogOptions {
  /** The service's targets (bench/harness/workdir.ts benchTargets). */
  targets: Record<string, unknown>[];
  /** Spread the events over this many ordering keys (`data.bench_key`); 0: none. */
  orderKeys: number;
}

export async function enqueueBacklog(
  kind: 'service' | 'baseline',
  redisUrl: string,
  prefix: string,
  count: number,
  opts: BacklogOptions,
): Promise<{ seconds: number }> {
  const connection = createRedisConnector({ ...serviceDefaults(), redisUrl }).open('producer');
  await new Promise<void>((resolve, reject) => {
    connection.once('ready', resolve);
    connection.once('error', reject);
  });
  const targets = opts.targets.map((t) => targetSchema.parse(t));
  const producer =
    kind === 'service' ? servicePipeline(connection, prefix, targets) : baselineProducer(connection, prefix);
  const started = performance.now();
  let next = 0;
  let notAccepted = 0;
  // Many adds in flight on the one connection: ioredis pipelines them, as under real load.
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const definition = EVENT_TABLE[i % EVENT_TABLE.length];
      if (!definition) throw new Error('empty event table');
      if (
        !(await producer.enqueue(
          request(definition.type, definition.path, opts.orderKeys > 0 ? `K${i % opts.orderKeys}` : undefined),
        ))
      )
        notAccepted++;
    }
  };
  try {
    await Promise.all(Array.from({ length: 64 }, lane));
  } finally {
    await producer.close();
    connection.disconnect();
  }
  if (notAccepted > 0) throw new Error(`${notAccepted} of ${count} backlog events were not accepted (duplicate ids?)`);
  return { seconds: (performance.now() - started) / 1000 };
}

function request(eventType: EventType, path: string, orderKey?: string): VerifiedRequest {
  const nonce = randomNonce();
  const now = Date.now();
  let { body } = uniqueSampleBody(eventType);
  if (orderKey !== undefined) {
    const parsed = JSON.parse(body) as { data: Record<string, unknown> };
    parsed.data[ORDER_FIELD] = orderKey;
    body = JSON.stringify(parsed);
  }
  return {
    eventType,
    path,
    body: Buffer.from(body),
    timestamp: now,
    nonce,
    signatureHeaders: {
      'x-svc-timestamp': String(now),
      'x-svc-nonce': nonce,
      'x-svc-sign': encodeURIComponent(randomBytes(256).toString('base64')),
      'x-svc-sign-alg': 'SHA256_WITH_RSA',
    },
    contentType: 'application/json',
    receivedAtMs: now,
  };
}
