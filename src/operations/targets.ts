import type { Queue } from 'bullmq';
import { UnknownTargetError } from './dead-letters';

/** Pausing a target stops every worker from starting its deliveries; they wait in its queue. */
export function createTargetControl(deliveries: ReadonlyMap<string, Queue>) {
  function queueOf(name: string): Queue {
    const queue = deliveries.get(name);
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
      return Promise.all([...deliveries].map(async ([target, q]) => ({ target, paused: await q.isPaused() })));
    },
  };
}

export type TargetControl = ReturnType<typeof createTargetControl>;
