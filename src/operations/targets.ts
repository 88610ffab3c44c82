import type { QueueRegistry } from '../pipeline/queue-registry';
import type { DeliveryQueue } from '../model/queues';
import { UnknownTargetError } from './dead-letters';

/** Pausing a target stops every worker from starting its deliveries; they wait in its queue. */
export function createTargetControl(pipeline: Pick<QueueRegistry, 'deliveryQueue' | 'deliveryQueues'>) {
  function queueOf(name: string): DeliveryQueue {
    const queue = pipeline.deliveryQueue(name);
    if (!queue) throw new UnknownTargetError(name);
    return queue;
  }
  return {
    async pause(name: string): Promise<void> {
      await queueOf(name).pause();
    },
    async resume(name: string): Promise<void> {
      await queueOf(name).resume();
    },
    async states(): Promise<{ target: string; paused: boolean }[]> {
      return Promise.all(
        pipeline.deliveryQueues().map(async ([target, q]) => ({ target, paused: await q.isPaused() })),
      );
    },
  };
}

export type TargetControl = ReturnType<typeof createTargetControl>;
