import { randomBytes } from 'node:crypto';
import { EVENT_TABLE } from '../src/events/table';
import { createProducerConnection } from '../src/pipeline/connection';
import { createPipeline } from '../src/pipeline/pipeline';
import { randomNonce } from '../src/signing/sign';
import { uniqueSampleBody } from './bodies';
import { buildEventJob } from './event-job';
import { pipelineOptionsFor, serviceDefaults } from './service-defaults';

/**
 * Queues `count` events with the service's own pipeline (src/pipeline: same job options and
 * de-duplication) while no worker runs, so a drain starts from a full backlog. Signing
 * is skipped (workers never verify); the signature header gets a random value of the real length.
 */
export async function enqueueBacklog(redisUrl: string, prefix: string, count: number): Promise<{ seconds: number }> {
  const connection = createProducerConnection(redisUrl);
  await new Promise<void>((resolve, reject) => {
    connection.once('ready', resolve);
    connection.once('error', reject);
  });
  const pipeline = createPipeline(connection, pipelineOptionsFor(serviceDefaults(), prefix));
  const started = performance.now();
  let next = 0;
  let notAccepted = 0;
  // Many adds in flight on the one connection: ioredis pipelines them, as under real load.
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const definition = EVENT_TABLE[i % EVENT_TABLE.length];
      if (!definition) throw new Error('empty event table');
      const nonce = randomNonce();
      const now = Date.now();
      const job = buildEventJob({
        eventType: definition.type,
        path: definition.path,
        body: Buffer.from(uniqueSampleBody(definition.type).body),
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
      });
      if ((await pipeline.enqueueEvent(job, nonce)) !== 'accepted') notAccepted++;
    }
  };
  try {
    await Promise.all(Array.from({ length: 64 }, lane));
  } finally {
    await pipeline.close();
    connection.disconnect();
  }
  if (notAccepted > 0) throw new Error(`${notAccepted} of ${count} backlog events were not accepted (duplicate ids?)`);
  return { seconds: (performance.now() - started) / 1000 };
}
