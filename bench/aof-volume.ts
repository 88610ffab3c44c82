/**
 * What Redis's append-only file takes per notification: the bytes one received notification writes
 * to the AOF, and the bytes its delivery adds (the completed jobs trimmed as `retention.completed`
 * asks included), measured through the real service on a throwaway Redis with AOF on and rewrites
 * off, so that the file holds every write. A receiver takes the notifications first, then a worker
 * delivers them, so each side is counted apart.
 *
 *   npx ts-node bench/aof-volume.ts [events=2000] [targets=1]
 */
import type { Redis } from 'ioredis';
import { EVENT_TABLE } from '../src/model/event-table';
import { measurement, sendSamples, startInProcess } from './harness/in-process';

/** Few enough that trimming the completed jobs is under way for most of the deliveries counted. */
const KEEP_COMPLETED = 100;

/** Redis's default `auto-aof-rewrite-min-size`: the size at which the first rewrite starts. */
const DEFAULT_REWRITE_MIN_BYTES = 64 * 1024 * 1024;

/**
 * The AOF's size once it stops growing: the last job's finish reaches Redis after the sink has
 * counted its delivery, and with `everysec` Redis may hold a write back while an fsync is under way.
 */
async function aofBytes(redis: Redis): Promise<number> {
  const size = async () => {
    const m = /^aof_current_size:(\d+)/m.exec(await redis.info('persistence'));
    if (!m?.[1]) throw new Error('INFO persistence has no aof_current_size: is appendonly on?');
    return Number(m[1]);
  };
  let last = await size();
  for (let i = 0; i < 25; i++) {
    await new Promise((r) => setTimeout(r, 200));
    const now = await size();
    if (now === last) return now;
    last = now;
  }
  throw new Error('the AOF was still growing after 5 s');
}

const events = Number(process.argv[2] ?? 2000);
const targetCount = Number(process.argv[3] ?? 1);

measurement(
  (dir) => ['--appendonly', 'yes', '--appendfsync', 'everysec', '--auto-aof-rewrite-percentage', '0', '--dir', dir],
  async ({ redisUrl, redis, sink, keys, writeConfig }) => {
    const file = writeConfig({
      retention: { completed: { ageSeconds: 3600, count: KEEP_COMPLETED } },
      targets: Array.from({ length: targetCount }, (_, i) => ({ name: `t${i}`, url: sink.url, events: ['*'] })),
    });

    const { service: receiver } = await startInProcess(redisUrl, file, keys, 'receiver');
    const atStart = await aofBytes(redis);
    const bodyBytes = await sendSamples(
      receiver.receiver!.port,
      keys,
      events,
      (i) => EVENT_TABLE[i % EVENT_TABLE.length]!.type,
    );
    const received = await aofBytes(redis);
    await receiver.close();

    const { service: worker } = await startInProcess(redisUrl, file, keys, 'worker');
    await sink.waitFor(events * targetCount);
    const done = await aofBytes(redis);
    await worker.close();

    const perReceived = (received - atStart) / events;
    const perDelivery = (done - received) / (events * targetCount);
    const perEvent = perReceived + perDelivery * targetCount;
    return [
      `events ${events} (the seven types in turn, bodies ${Math.round(bodyBytes / events)} bytes on average), ` +
        `targets ${targetCount}, completed jobs kept ${KEEP_COMPLETED} per queue`,
      `AOF bytes: at start ${atStart}, after receiving ${received}, after delivering ${done}`,
      `per notification received: ${Math.round(perReceived)} bytes; per delivery: ${Math.round(perDelivery)} bytes; ` +
        `per notification received and delivered: ${Math.round(perEvent)} bytes`,
      ...[100, 1000].map(
        (rate) =>
          `  at ${rate}/s: ${((rate * perEvent) / 1048576).toFixed(2)} MiB/s of AOF; Redis's default first rewrite ` +
          `(at ${DEFAULT_REWRITE_MIN_BYTES / 1048576} MiB) after ${Math.round(DEFAULT_REWRITE_MIN_BYTES / (rate * perEvent))} s`,
      ),
    ];
  },
);
