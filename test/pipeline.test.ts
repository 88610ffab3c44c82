import { Redis } from 'ioredis';
import { targetSchema } from '../src/model/target-schema';
import { FANOUT_ATTEMPTS } from '../src/model/job-options';
import { toDeliveryJob, type EventJob } from '../src/model/jobs';
import { createPipeline, pipelineOptions, type Pipeline } from '../src/pipeline/pipeline';
import { eventIdsForRequest, requestIndexBucket, requestIndexEntries } from '../src/pipeline/request-index';
import { testConfig } from './support/harness';
import { paymentEvent } from './support/payment-event';

const erp = targetSchema.parse({ name: 'erp', url: 'http://127.0.0.1:9/hook', events: ['*'], maxAttempts: 5 });
const crm = targetSchema.parse({ name: 'crm', url: 'http://127.0.0.1:9/hook', events: ['payment.result'] });

let redis: Redis;
let pipeline: Pipeline;

beforeEach(() => {
  const config = { ...testConfig({ PLATFORM_PUBLIC_KEYS: 'unused' }), targets: [erp] };
  redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 });
  pipeline = createPipeline(redis, pipelineOptions(config));
});
afterEach(async () => {
  await pipeline.close();
  redis.disconnect();
});

describe('the pipeline', () => {
  it('when an event is queued, then each target that takes it has its delivery job at once, found by the event id', async () => {
    await pipeline.setTargets([erp, crm]);
    const event = paymentEvent('REQ-1');
    expect(await pipeline.enqueueEvent(event, event.nonce)).toBe('accepted');
    expect(await pipeline.enqueueEvent(event, event.nonce)).toBe('replay');
    expect(await pipeline.enqueueEvent(event, 'another-nonce')).toBe('duplicate');

    for (const target of [erp, crm]) {
      const queue = pipeline.deliveryQueue(target.name)!;
      expect(await queue.count()).toBe(1);
      const job = await queue.getJob(event.eventId);
      expect(job?.data).toEqual(toDeliveryJob(event, target.name));
      expect(job?.opts).toMatchObject({
        attempts: target.maxAttempts,
        backoff: { type: 'target' },
        removeOnFail: false,
      });
    }
    expect(await pipeline.eventQueue('payment.result').count()).toBe(0); // no second job lifecycle
    const found = await pipeline.findEvent(event.eventId);
    expect(found?.kind).toBe('delivery');
    expect(found?.job.id).toBe(event.eventId);
    expect(await pipeline.isKnown(event.eventId)).toBe(true);
    expect(await pipeline.findEvent('evt_unknown')).toBeUndefined();
    expect(await pipeline.isKnown('evt_unknown')).toBe(false);
  });

  it('when no target takes an event, then it is kept as its event job, with the event job options, and still de-duplicated', async () => {
    await pipeline.setTargets([crm]);
    const event = { ...paymentEvent('REQ-7'), eventType: 'fx.result' } as unknown as EventJob;
    expect(await pipeline.enqueueEvent(event, event.nonce)).toBe('accepted');
    expect(await pipeline.enqueueEvent(event, 'another-nonce')).toBe('duplicate');

    const found = await pipeline.findEvent(event.eventId);
    expect(found?.kind).toBe('event');
    expect(found?.queue.name).toBe('fx.result');
    expect(found?.job.data).toEqual(event);
    expect(found?.job.opts).toMatchObject({
      attempts: FANOUT_ATTEMPTS,
      backoff: { type: 'fanout' },
      removeOnFail: false,
    });
    expect(await pipeline.deliveryQueue('crm')!.count()).toBe(0);
  });

  it('when deliveries are added twice, then each target has one job whose id is the event id, with its own attempts', async () => {
    const event = paymentEvent('REQ-2');
    await pipeline.addDeliveries(event, [erp]);
    await pipeline.addDeliveries(event, [erp]);

    const queue = pipeline.deliveryQueue('erp')!;
    expect(await queue.count()).toBe(1);
    const job = await queue.getJob(event.eventId);
    expect(job?.data).toMatchObject({ eventId: event.eventId, target: 'erp', rawBody: event.rawBody });
    expect(job?.opts).toMatchObject({ attempts: 5, backoff: { type: 'target' }, removeOnFail: false });
  });

  it('when an event is queued, then it is found by the platform request_id, once however often it arrives', async () => {
    const event = paymentEvent('REQ-3');
    await pipeline.enqueueEvent(event, event.nonce);
    await pipeline.enqueueEvent(event, 'another-nonce');
    expect(await pipeline.eventIdsForRequest('REQ-3')).toEqual([event.eventId]);
    expect(await pipeline.eventIdsForRequest('REQ-none')).toEqual([]);
    const bucket = requestIndexBucket(pipeline.prefix, 'REQ-3', Date.now());
    expect(await redis.hget(bucket, 'REQ-3')).toBe(event.eventId);
    expect(await redis.pttl(bucket)).toBeGreaterThan(pipeline.options.dedupWindowMs);
  });

  it('when two events carry one request_id, then the index gives both', async () => {
    const first = paymentEvent('REQ-5');
    const second = { ...first, eventId: 'evt_second', nonce: 'nonce-second', rawBody: `${first.rawBody} ` };
    await pipeline.enqueueEvent(first, first.nonce);
    await pipeline.enqueueEvent(second, second.nonce);
    expect(await pipeline.eventIdsForRequest('REQ-5')).toEqual([first.eventId, 'evt_second'].sort());
  });

  it('when an event was indexed days ago, then it is found while inside the window and not after', async () => {
    const day = 86_400_000;
    const event = paymentEvent('REQ-6');
    const indexedAt = Date.now() - 3 * day;
    const { entries } = requestIndexEntries(pipeline.prefix, event.payload, 7 * day, undefined, indexedAt)!;
    for (const { key, requestId } of entries) await redis.hset(key, requestId, event.eventId);
    expect(await eventIdsForRequest(redis, pipeline.prefix, 'REQ-6', 7 * day)).toEqual([event.eventId]);
    expect(await eventIdsForRequest(redis, pipeline.prefix, 'REQ-6', 7 * day, indexedAt + 9 * day)).toEqual([]);
  });

  it('when the targets change, then new targets get a queue and removed ones lose theirs, their jobs kept in Redis', async () => {
    const event = paymentEvent('REQ-4');
    await pipeline.addDeliveries(event, [erp]);

    await pipeline.setTargets([crm]);
    expect(pipeline.deliveryQueues().map(([name]) => name)).toEqual(['crm']);
    expect(pipeline.deliveryQueue('erp')).toBeUndefined();
    expect(pipeline.allQueues().map((q) => q.name)).toContain('deliver.crm');
    await expect(pipeline.addDeliveries(event, [erp])).rejects.toThrow(/no delivery queue for target erp/);

    await pipeline.setTargets([crm, erp]);
    expect(await pipeline.deliveryQueue('erp')!.getJob(event.eventId)).toBeDefined();
  });
});
