import type { BlockedKey, Sequencer } from '../ordering/sequencer';
import type { QueueRegistry } from '../pipeline/queue-registry';
import { UnknownTargetError } from './dead-letters';
import { ServiceError } from '../model/errors';

/**
 * The ordering keys of a target (`order`, `onDeadLetter: block`) whose first delivery is a dead letter,
 * holding back the later deliveries of the key, and letting one go on. Releasing a key leaves its dead
 * letter where it is (replay or discard it later; a replay then delivers it outside the order).
 */
export function createBlockedKeys(pipeline: Pick<QueueRegistry, 'deliveryQueue' | 'ordering'>) {
  /** The target's sequencer; undefined for a target without `order`. */
  function sequencerOf(target: string): Sequencer | undefined {
    if (!pipeline.deliveryQueue(target)) throw new UnknownTargetError(target);
    return pipeline.ordering(target);
  }
  return {
    /** The target's blocked keys, longest-held first; none (and `ordered: false`) for a target without `order`. */
    async list(target: string): Promise<{ ordered: boolean; blocked: BlockedKey[] }> {
      const sequencer = sequencerOf(target);
      return sequencer ? { ordered: true, blocked: await sequencer.blocked() } : { ordered: false, blocked: [] };
    },

    /** Lets the key's later deliveries go on; answers the dead letter that held them (it stays). */
    async release(target: string, key: string): Promise<{ key: string; eventId: string }> {
      const sequencer = sequencerOf(target);
      if (!sequencer) throw new NotOrderedError(target);
      const released = await sequencer.release(key);
      if (!released) throw new KeyNotBlockedError(target, key);
      return released;
    },
  };
}

export type BlockedKeys = ReturnType<typeof createBlockedKeys>;

/** The target has no `order`, so none of its keys can be blocked. 409. */
export class NotOrderedError extends ServiceError {
  readonly code = 'not_ordered';
  readonly status = 409;
  constructor(readonly target: string) {
    super(`target "${target}" does not order its deliveries (no order in its settings)`);
  }
}

/** No dead letter heads the key's deliveries (never blocked, or already replayed, discarded or released). 404. */
export class KeyNotBlockedError extends ServiceError {
  readonly code = 'not_blocked';
  readonly status = 404;
  constructor(
    readonly target: string,
    readonly key: string,
  ) {
    super(`key ${JSON.stringify(key)} of target "${target}" is not blocked`);
  }
}
