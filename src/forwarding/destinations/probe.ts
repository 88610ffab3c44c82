import { connect as amqpConnect } from 'amqplib';
import { jetstreamManager } from '@nats-io/jetstream';
import { Redis } from 'ioredis';
import { describeError, readTlsFiles, scrubCredentials } from './broker';
import { natsConnectOptions } from './nats';
import { connect as natsConnect } from '@nats-io/transport-node';
import { EVENT_TYPES } from '../../model/event-table';
import {
  fillTemplate,
  type AmqpDestination,
  type Destination,
  type NatsDestination,
  type PostgresDestination,
  type RedisStreamDestination,
} from '../../model/destination-schema';
import type { Target } from '../../model/target-schema';
import { inspectTable } from './postgres-table';

/** What `config check` found at a target's broker: `ok` false is also a warning; `problems` fail the check. */
export interface ProbeResult {
  ok: boolean;
  line: string;
  problems?: string[];
}

/** The event types a target takes, for filling `{type}`. */
function typesOf(target: Target): string[] {
  return target.events.includes('*') ? [...EVENT_TYPES] : [...target.events];
}

async function probeAmqp(d: AmqpDestination, timeoutMs: number): Promise<ProbeResult> {
  const model = await amqpConnect(d.url, {
    ...(d.url.startsWith('amqps:') ? readTlsFiles(d.tls) : {}),
    timeout: timeoutMs,
  });
  try {
    model.on('error', () => undefined);
    const ch = await model.createChannel();
    ch.on('error', () => undefined);
    if (d.exchange === '') return { ok: true, line: 'reachable; publishes to the default exchange' };
    // checkExchange closes the channel when the exchange is missing (404).
    return await ch.checkExchange(d.exchange).then(
      () => ({ ok: true, line: `reachable; exchange "${d.exchange}" exists` }),
      (err: unknown) => ({
        ok: false,
        line:
          `reachable, but exchange "${d.exchange}" does not exist (${describeError(err)}): every delivery would ` +
          `fail`,
      }),
    );
  } finally {
    await model.close().catch(() => undefined);
  }
}

async function probeNats(target: Target, d: NatsDestination, timeoutMs: number): Promise<ProbeResult> {
  const nc = await natsConnect({ ...natsConnectOptions(d), timeout: timeoutMs, reconnect: false });
  try {
    const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
    const subjects = [...new Set(typesOf(target).map((type) => fillTemplate(d.subject, type)))];
    const found = await Promise.all(
      subjects.map(async (subject) => ({ subject, stream: await jsm.streams.find(subject).catch(() => undefined) })),
    );
    const missing = found.filter((s) => s.stream === undefined).map((s) => s.subject);
    const streams = [...new Set(found.flatMap((s) => (s.stream ? [s.stream] : [])))];
    if (missing.length) {
      return {
        ok: false,
        line:
          `reachable, but no stream captures ${missing.map((s) => `"${s}"`).join(', ')}: those deliveries would ` +
          `be dead-lettered (no stream)`,
      };
    }
    return {
      ok: true,
      line:
        `reachable; stream ${streams.map((s) => `"${s}"`).join(', ')} captures ` +
        `${subjects.length === 1 ? `"${subjects[0]}"` : `its ${subjects.length} subjects`}`,
    };
  } finally {
    await nc.close();
  }
}

async function probeRedisStream(d: RedisStreamDestination, timeoutMs: number): Promise<ProbeResult> {
  const redis = new Redis(d.url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    disconnectTimeout: 0,
    ...(d.url.startsWith('rediss:') ? { tls: readTlsFiles(d.tls) } : {}),
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    if (d.minReplicasAck === 0) return { ok: true, line: 'reachable' };
    const replicas = Number(/connected_slaves:(\d+)/.exec(await redis.info('replication'))?.[1] ?? 0);
    return replicas >= d.minReplicasAck
      ? { ok: true, line: `reachable; ${replicas} replicas connected (minReplicasAck ${d.minReplicasAck})` }
      : {
          ok: false,
          line:
            `reachable, but ${replicas} replicas connected and minReplicasAck is ${d.minReplicasAck}: every ` +
            `delivery would fail`,
        };
  } finally {
    redis.disconnect();
  }
}

/** Checks the table without creating it: a missing one is fine only when `createTable` will make it at start-up. */
async function probePostgres(d: PostgresDestination, timeoutMs: number): Promise<ProbeResult> {
  const verdict = await inspectTable(d, timeoutMs, false);
  if (!verdict.reachable) return { ok: false, line: `not reachable: ${verdict.reason}` };
  if (verdict.missing && d.createTable)
    return { ok: true, line: `reachable; table "${d.table}" is missing and createTable creates it at start-up` };
  if (verdict.problems.length)
    return { ok: false, line: `reachable, but ${verdict.problems.join('; ')}`, problems: verdict.problems };
  if (verdict.warnings.length) return { ok: false, line: `reachable, but ${verdict.warnings.join('; ')}` };
  return { ok: true, line: `reachable; table "${d.table}" has every column, webhook_id its key, INSERT granted` };
}

/** Connects to a target's broker once and says whether it is reachable and would take its deliveries. */
export async function probeDestination(target: Target, d: Destination, timeoutMs = 3000): Promise<ProbeResult> {
  try {
    switch (d.type) {
      case 'amqp':
        return await probeAmqp(d, timeoutMs);
      case 'nats':
        return await probeNats(target, d, timeoutMs);
      case 'redis-stream':
        return await probeRedisStream(d, timeoutMs);
      case 'postgres':
        return await probePostgres(d, timeoutMs);
    }
  } catch (err) {
    return { ok: false, line: `not reachable: ${scrubCredentials(describeError(err))}` };
  }
}
