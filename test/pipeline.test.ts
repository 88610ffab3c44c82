import { Redis } from 'ioredis';
import { targetSchema } from '../src/forwarding/target-schema';
import { eventIdFor } from '../src/pipeline/ids';
import { FANOUT_ATTEMPTS } from '../src/pipeline/job-options';
import type { EventJob } from '../src/pipeline/jobs';
import { createPipeline, pipelineOptions, type Pipeline } from '../src/pipeline/pipeline';
import { eventIdsForRequest, indexRequestIds, requestIndexBucket } from '../src/pipeline/request-index';
import { testConfig } from './support/harness';

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

function paymentEvent(requestId: string): EventJob<'payment.result'> {
  const rawBody = JSON.stringify({ type: 'MERCH', data: { request_id: requestId, amount: '1.00' } });
  return {
    eventId: eventIdFor('payment.result', undefined, Buffer.from(rawBody)),
    eventType: 'payment.result',
    receivedAt: new Date().toISOString(),
    path: '/api/v2/merch/pay/notify',
    timestamp: Date.now(),
    nonce: `nonce-${requestId}`,
    scheme: 'current',
    rawBody,
    rawBodyEncoding: 'utf8',
    signatureHeaders: {},
    payload: JSON.parse(rawBody) as EventJob<'payment.result'>['payload'],
  };
}

describe('the pipeline', () => {
  it('when an event is queued, then it is found by its id through BullMQ de-duplication, with the event job options', async () => {
    const event = paymentEvent('REQ-1');
    expect(await pipeline.enqueueEvent(event, event.nonce)).toBe('accepted');
    expect(await pipeline.enqueueEvent(event, event.nonce)).toBe('replay');
    expect(await pipeline.enqueueEvent(event, 'another-nonce')).toBe('duplicate');

    const found = await pipeline.findEvent(event.eventId);
    expect(found?.queue.name).toBe('payment.result');
    expect(found?.job.data).toEqual(event);
    expect(found?.job.opts).toMatchObject({ attempts: FANOUT_ATTEMPTS, backoff: { type: 'fanout' }, removeOnFail: false });
    expect(await pipeline.findEvent('evt_unknown')).toBeUndefined();
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

  it('when the request-id index is written, then the event is found by the platform request_id, once however often it is written', async () => {
    const event = paymentEvent('REQ-3');
    await pipeline.indexRequestIds(event);
    await pipeline.indexRequestIds(event);
    expect(await pipeline.eventIdsForRequest('REQ-3')).toEqual([event.eventId]);
    expect(await pipeline.eventIdsForRequest('REQ-none')).toEqual([]);
    const bucket = requestIndexBucket(pipeline.prefix, 'REQ-3', Date.now());
    expect(await redis.hget(bucket, 'REQ-3')).toBe(event.eventId);
    expect(await redis.pttl(bucket)).toBeGreaterThan(pipeline.options.dedupWindowMs);
  });

  it('when two events carry one request_id, then the index gives both; entries of the earlier set form are still read', async () => {
    const first = paymentEvent('REQ-5');
    const second = { ...first, eventId: 'evt_second', rawBody: `${first.rawBody} ` };
    await pipeline.indexRequestIds(first);
    await pipeline.indexRequestIds(second);
    await redis.sadd(`${pipeline.prefix}:index:request_id:REQ-5`, 'evt_from_before_the_upgrade');
    expect(await pipeline.eventIdsForRequest('REQ-5')).toEqual([first.eventId, 'evt_from_before_the_upgrade', 'evt_second'].sort());
  });

  it('when an event was indexed days ago, then it is found while inside the window and not after', async () => {
    const day = 86_400_000;
    const event = paymentEvent('REQ-6');
    const indexedAt = Date.now() - 3 * day;
    await indexRequestIds(redis, pipeline.prefix, event.payload, event.eventId, 7 * day, indexedAt);
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
