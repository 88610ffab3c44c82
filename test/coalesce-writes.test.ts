import type { Socket } from 'node:net';
import { Cluster, Redis } from 'ioredis';
import { targetSchema } from '../src/model/target-schema';
import { createPipeline, pipelineOptions, type Pipeline } from '../src/pipeline/pipeline';
import { coalesceEveryTurn, coalesceWritesThisTurn } from '../src/redis/coalesce-writes';
import { testConfig } from './support/harness';
import { paymentEvent } from './support/payment-event';

const config = {
  ...testConfig({ PLATFORM_PUBLIC_KEYS: 'unused' }),
  targets: [targetSchema.parse({ name: 'erp', url: 'http://127.0.0.1:9/hook', events: ['*'] })],
};
let redis: Redis;

beforeEach(async () => {
  redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
  await new Promise<void>((resolve, reject) => redis.once('ready', resolve).once('error', reject));
});
afterEach(() => redis.disconnect());

/** Counts the writes that reach the connection's socket (each one system call), passing them on unchanged. */
function countSocketWrites(connection: Redis): { writes: () => number } {
  const socket = connection.stream as Socket & { _write: Socket['_write']; _writev?: Socket['_writev'] };
  let writes = 0;
  const write = socket._write.bind(socket);
  const writev = socket._writev?.bind(socket);
  socket._write = (...args) => {
    writes++;
    write(...args);
  };
  if (writev) {
    socket._writev = (...args) => {
      writes++;
      writev(...args);
    };
  }
  return { writes: () => writes };
}

const keys = Array.from({ length: 20 }, (_, i) => `coalesce:${process.pid}:${i}`);

describe('coalesceWritesThisTurn', () => {
  it('sends the commands of one turn in one socket write, each with its own reply', async () => {
    const socket = countSocketWrites(redis);
    coalesceWritesThisTurn(redis);
    coalesceWritesThisTurn(redis); // a second call in the same turn holds nothing twice
    const replies = await Promise.all(keys.map((key, i) => redis.set(key, `v${i}`)));
    expect(replies).toEqual(keys.map(() => 'OK'));
    expect(socket.writes()).toBe(1);
    expect(await redis.mget(...keys)).toEqual(keys.map((_, i) => `v${i}`));
    await redis.del(...keys);
  });

  it('without it, each command is its own write (what the count above is compared with)', async () => {
    const socket = countSocketWrites(redis);
    await Promise.all(keys.map((key, i) => redis.set(key, `v${i}`)));
    expect(socket.writes()).toBe(keys.length);
    await redis.del(...keys);
  });

  it('holds nothing past the turn: a later command is written at once', async () => {
    coalesceWritesThisTurn(redis);
    await redis.ping();
    const socket = countSocketWrites(redis);
    const pong = redis.ping();
    expect(socket.writes()).toBe(1); // written synchronously, not held for the next turn
    await expect(pong).resolves.toBe('PONG');
  });
});

describe("coalesceEveryTurn (the workers' connection)", () => {
  it('sends the commands of each turn in one write, turn after turn, each with its own reply', async () => {
    coalesceEveryTurn(redis);
    const socket = countSocketWrites(redis);
    const first = await Promise.all(keys.map((key, i) => redis.set(key, `v${i}`)));
    expect(first).toEqual(keys.map(() => 'OK'));
    expect(socket.writes()).toBe(1);
    // A later turn's commands are held too, and still go out before the loop waits again.
    const pending = redis.mget(...keys.slice(0, 2));
    const alsoPending = redis.get(keys[2]!);
    expect(socket.writes()).toBe(1);
    await expect(Promise.all([pending, alsoPending])).resolves.toEqual([['v0', 'v1'], 'v2']);
    expect(socket.writes()).toBe(2);
    await redis.del(...keys);
  });

  it('leaves a cluster connection as it is', () => {
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    const send = cluster.sendCommand;
    coalesceEveryTurn(cluster);
    expect(cluster.sendCommand).toBe(send);
    cluster.disconnect();
  });
});

describe('the ingest call', () => {
  let pipeline: Pipeline;
  beforeEach(() => {
    pipeline = createPipeline(redis, pipelineOptions(config));
  });
  afterEach(() => pipeline.close());

  const event = (n: number) => paymentEvent(`COALESCE-${process.pid}-${Date.now()}-${n}`);

  it('notifications enqueued in the same turn leave in one write and are each decided on their own', async () => {
    await pipeline.enqueueEvent(event(-1), `warm-${Date.now()}`); // loads the script and waits for the queues
    const events = Array.from({ length: 8 }, (_, i) => event(i));
    const socket = countSocketWrites(redis);
    // The same event twice under new replay keys: one is accepted, the other is a duplicate.
    const outcomes = await Promise.all(
      [...events, events[0]!].map((e, i) => pipeline.enqueueEvent(e, `${e.nonce}-${i}`)),
    );
    expect(outcomes.slice(0, 8)).toEqual(events.map(() => 'accepted'));
    expect(outcomes[8]).toBe('duplicate');
    expect(socket.writes()).toBe(1);
    for (const e of events) expect((await pipeline.findEvent(e.eventId))?.kind).toBe('delivery');
  });
});
