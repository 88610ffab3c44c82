/**
 * What the completed-job retention costs in Redis memory: the bytes one delivered event keeps while
 * it can still be resent (its event job and its delivery job, with the body), measured by filling a
 * throwaway Redis through the real service and emptying the completed sets again.
 *
 *   npx ts-node bench/retention-memory.ts [events=2000] [targets=1]
 */
import type { Redis } from 'ioredis';
import { sampleBody } from '../src/signing/samples';
import { measurement, sendSamples, startInProcess } from './harness/in-process';

async function usedMemory(redis: Redis): Promise<number> {
  await new Promise((r) => setTimeout(r, 200));
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

const events = Number(process.argv[2] ?? 2000);
const targetCount = Number(process.argv[3] ?? 1);

measurement(
  () => [],
  async ({ redisUrl, redis, sink, keys, writeConfig }) => {
    const file = writeConfig({
      targets: Array.from({ length: targetCount }, (_, i) => ({ name: `t${i}`, url: sink.url, events: ['*'] })),
    });
    const { service, config } = await startInProcess(redisUrl, file, keys);
    const port = service.receiver!.port;

    const before = await usedMemory(redis);
    const type = 'payment.result';
    await sendSamples(port, keys, events, () => type);
    await sink.waitFor(events * targetCount);
    await new Promise((r) => setTimeout(r, 500));
    const filled = await usedMemory(redis);
    // What retention removes after ageSeconds: the completed jobs. De-duplication keys and the request
    // index stay for the de-duplication window whatever the retention, so they are not counted.
    for (const queue of service.pipeline.allQueues()) await queue.clean(0, 1_000_000, 'completed');
    const emptied = await usedMemory(redis);

    const perEvent = (filled - emptied) / events;
    const bodyBytes = Buffer.byteLength(sampleBody(type));
    const lines = [
      `events ${events}, targets ${targetCount}, sample body ${bodyBytes} bytes`,
      `used_memory: before ${before}, after delivery ${filled}, completed jobs removed ${emptied}`,
      `retention cost per delivered event: ${Math.round(perEvent)} bytes`,
      ...[1, 10, 100].map((rate) => {
        const perHour = rate * 3600;
        const capped = Math.min(perHour, config.retention.completed.count);
        return (
          `  at ${rate}/s: ${perHour} events an hour -> ${((perHour * perEvent) / 1048576).toFixed(1)} MiB per hour of retention` +
          (capped < perHour
            ? ` (the count cap of ${config.retention.completed.count} jobs per queue holds it to ${((capped * perEvent) / 1048576).toFixed(1)} MiB)`
            : '')
        );
      }),
    ];
    await service.close();
    return lines;
  },
);
