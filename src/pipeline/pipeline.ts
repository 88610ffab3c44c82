import type { RedisClient } from '../redis/connect';
import { createEventLookup, type EventLookup } from './lookup';
import type { PipelineOptions } from './options';

export { pipelineOptions, type PipelineOptions } from './options';
import { createProducer, type PipelineObserver, type Producer } from './producer';
import { createQueueRegistry, type QueueRegistry } from './queue-registry';
import { createDeliveryEndRecorder, type RecordDeliveryEnd } from './archive-outcome';

/**
 * The pipeline's parts on one connection, built once per process by the entry point: the queue
 * registry (opens, closes and reconfigures queues), the producer (the only writer of jobs), the
 * event lookup, and the recorder of deliveries' ends for the archive. Each caller declares the part it
 * uses (`Pick<Producer, …>`, `QueueRegistry`, …).
 */
export type Pipeline = QueueRegistry & Producer & EventLookup & { recordDeliveryEnd: RecordDeliveryEnd };

export function createPipeline(
  connection: RedisClient,
  options: PipelineOptions,
  observer: PipelineObserver = {},
): Pipeline {
  const queues = createQueueRegistry(connection, options, observer);
  const producer = createProducer(
    connection,
    options,
    {
      event: queues.eventQueue,
      quarantine: queues.quarantine,
      delivery: queues.deliveryQueue,
      targets: queues.targets,
    },
    observer,
  );
  const recordDeliveryEnd = createDeliveryEndRecorder(connection, options.prefix, options.archive === true);
  return { ...queues, ...producer, ...createEventLookup(queues, observer), recordDeliveryEnd };
}
