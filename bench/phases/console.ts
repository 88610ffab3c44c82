import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { Worker } from 'bullmq';
import { Registry } from 'prom-client';
import { wireAdmin } from '../../src/admin/wiring';
import { withTargetEnvironments } from '../../src/config/environments';
import { loadConfig } from '../../src/config/load';
import type { Config } from '../../src/config/schema';
import { createLogger } from '../../src/logging/logger';
import { EVENT_TYPES, type EventType } from '../../src/model/event-table';
import { eventIdFor } from '../../src/model/ids';
import { eventJob } from '../../src/model/jobs';
import { targetSchema } from '../../src/model/target-schema';
import { createPipeline, pipelineOptions, type Pipeline } from '../../src/pipeline/pipeline';
import { createRedisConnector, type RedisClient } from '../../src/redis/connect';
import { SCAN_BUDGET } from '../../src/operations/event-search';
import { uniqueSampleBody } from '../harness/bodies';
import type { BenchContext } from '../harness/context';
import type { ConsolePhase } from '../harness/results';
import { summarize } from '../harness/stats';

const USER = 'bench';
const PASSWORD = 'bench-console-password';
/** The share of the erp target's deliveries that are dead letters. */
const DEAD_LETTER_SHARE = 0.1;
const IN_FLIGHT = 200;

/**
 * The console's search over a full retention window: `events` notifications go through the real
 * ingest script (delivery jobs, request-id index) to two targets, `ledger` (every type) and `erp`
 * (payment.result only, a tenth of them dead letters), and BullMQ workers with a no-op processor
 * finish them, so the queues hold what a day of traffic leaves (completed retention raised to keep
 * them all). Then the admin app, in this process, answers console searches over HTTP with basic auth,
 * each timed from request to the last byte of the page.
 */
export async function runConsolePhase(ctx: BenchContext): Promise<ConsolePhase> {
  const { events, samples } = ctx.options.console;
  await ctx.redis.flush();
  const base = loadConfig({
    REDIS_URL: ctx.redis.url,
    ROLE: 'worker',
    QUEUE_PREFIX: 'console',
    ADMIN_USER: USER,
    ADMIN_PASSWORD: PASSWORD,
    LOG_LEVEL: 'error',
  });
  const config: Config = withTargetEnvironments({
    ...base,
    retention: { completed: { ageSeconds: 86_400, count: events * 2 } },
    targets: [
      targetSchema.parse({ name: 'ledger', url: 'http://127.0.0.1:9/ledger', events: ['*'] }),
      targetSchema.parse({ name: 'erp', url: 'http://127.0.0.1:9/erp', events: ['payment.result'], maxAttempts: 1 }),
    ],
  }).config;
  const connector = createRedisConnector(config);
  const connection = connector.open('producer');
  const pipeline = createPipeline(connection, pipelineOptions(config));
  const fillStarted = Date.now();
  const requestIds = await fill(pipeline, events);
  ctx.log(
    `console: ${events} events ingested in ${((Date.now() - fillStarted) / 1000).toFixed(1)} s; finishing their deliveries`,
  );
  const opened: RedisClient[] = [];
  await finish(pipeline, (role) => {
    const c = connector.open(role);
    opened.push(c);
    return c;
  });
  for (const c of opened) c.disconnect();
  const counts = Object.fromEntries(
    await Promise.all(
      pipeline.deliveryQueues().map(async ([t, q]) => [t, await q.getJobCounts('completed', 'failed')] as const),
    ),
  );
  ctx.log(`console: filled in ${((Date.now() - fillStarted) / 1000).toFixed(1)} s: ${JSON.stringify(counts)}`);

  const server = await listen(
    wireAdmin(config, pipeline, new Registry(), createLogger('error', new PassThrough().resume())),
  );
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const auth = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
  const timed = async (path: string): Promise<{ ms: number; body: string }> => {
    const started = performance.now();
    const res = await fetch(`${origin}${path}`, { headers: { authorization: auth } });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`console ${path} answered ${res.status}: ${body.slice(0, 300)}`);
    return { ms: performance.now() - started, body };
  };
  const measure = async (paths: () => string, check: (body: string) => boolean, what: string) => {
    for (let i = 0; i < 3; i++) await timed(paths()); // warm-up
    const ms: number[] = [];
    for (let i = 0; i < samples; i++) {
      const { ms: t, body } = await timed(paths());
      if (!check(body)) throw new Error(`console ${what}: the page does not show what it should`);
      ms.push(t);
    }
    return summarize(ms);
  };
  try {
    const pick = () => requestIds[Math.floor(Math.random() * requestIds.length)]!;
    const byRequestId = await measure(
      () => `/admin/console/events?q=${pick()}`,
      (b) => b.includes('by request_id') && b.includes('ledger'),
      'request_id search',
    );
    const firstPage = await measure(
      () => '/admin/console/events',
      (b) => (b.match(/<tr[^>]*>\s*<td[^>]*><time/g) ?? []).length === 50,
      'list, first page',
    );
    const filtered = await measure(
      () => '/admin/console/events?type=payment.result&target=erp&state=dead_letter',
      (b) => b.includes('badge s-dead_letter'),
      'filtered list (type, target, dead letters)',
    );
    const noMatch = await measure(
      () => '/admin/console/events?type=remittance.incoming&target=erp',
      (b) => b.includes(`Looked at ${SCAN_BUDGET} deliveries`) || b.includes('No deliveries match.'),
      'filter that matches nothing',
    );
    // Twenty pages back through the list, each from the cursor of the one before.
    const deepMs: number[] = [];
    for (let round = 0; round < Math.max(1, Math.round(samples / 20)); round++) {
      let path = '/admin/console/events?type=payment.result';
      for (let page = 0; page < 20; page++) {
        const { ms, body } = await timed(path);
        deepMs.push(ms);
        const next = /href="([^"]+)" rel="next"/.exec(body)?.[1];
        if (!next) break;
        path = next.replace(/&amp;/g, '&');
      }
    }
    return {
      events,
      deliveries: counts,
      samples,
      byRequestId,
      firstPage,
      filtered,
      noMatch,
      pagedBack: summarize(deepMs),
    };
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
    await pipeline.close();
    connection.disconnect();
  }
}

async function listen(app: Parameters<typeof createServer>[1]): Promise<Server> {
  const server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return server;
}

/** `events` notifications through the producer, the types taken in turn, IN_FLIGHT at a time; answers their request ids. */
async function fill(pipeline: Pipeline, events: number): Promise<string[]> {
  const requestIds: string[] = [];
  let next = 0;
  const one = async (i: number) => {
    const type: EventType = EVENT_TYPES[i % EVENT_TYPES.length]!;
    const { body, requestId } = uniqueSampleBody(type);
    requestIds.push(requestId);
    const now = Date.now();
    const job = eventJob(
      {
        eventId: eventIdFor(type, 'production', Buffer.from(body)),
        eventType: type,
        receivedAt: new Date(now).toISOString(),
        path: `/bench/${type}`,
        timestamp: now,
        nonce: `console-${i}`,
        scheme: 'current',
        environment: 'production',
        rawBody: body,
        rawBodyEncoding: 'utf8',
        signatureHeaders: {},
      },
      JSON.parse(body),
    );
    const result = await pipeline.enqueueEvent(job, `console-${i}`);
    if (result !== 'accepted') throw new Error(`console fill: event ${i} was ${JSON.stringify(result)}`);
  };
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < events) await one(next++);
    }),
  );
  return requestIds;
}

/** Every delivery finished by a no-op worker per target: delivered, or (erp, one in ten) failed for good. */
async function finish(pipeline: Pipeline, open: (role: 'worker') => RedisClient): Promise<void> {
  const workers = pipeline.deliveryQueues().map(
    ([target, queue]) =>
      new Worker(
        queue.name,
        async (job) => {
          if (target === 'erp' && Math.random() < DEAD_LETTER_SHARE) throw new Error('HTTP 500 from erp');
          return { status: 200, latencyMs: 1, eventId: job.id };
        },
        { connection: open('worker'), prefix: queue.opts.prefix, concurrency: 100 },
      ),
  );
  try {
    for (;;) {
      const left = await Promise.all(
        pipeline.deliveryQueues().map(([, q]) => q.getJobCounts('waiting', 'active', 'delayed', 'prioritized')),
      );
      if (left.every((c) => Object.values(c).every((n) => n === 0))) return;
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await Promise.all(workers.map((w) => w.close()));
  }
}
