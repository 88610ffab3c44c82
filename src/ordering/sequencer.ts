import path from 'node:path';
import type { Job } from 'bullmq';
import type { Result } from 'ioredis';
import type { Target } from '../model/target-schema';
import type { DeliveryJob } from '../model/jobs';
import { ownKeys } from '../model/names';
import type { DeliveryQueue } from '../model/queues';
import { whenReady, type RedisClient } from '../redis/connect';
import { keyDigest } from '../routing/ordering-key';
import { PARKED_BEHIND_MS, PARKED_NEXT_MS } from './park';
import { bullmqScript } from '../redis/bullmq-scripts';
import { loadLua } from '../redis/lua';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    webhookOrderPlace(sequence: string, eventId: string): Result<[number, string | null], Context>;
    webhookOrderPop(...args: (string | number)[]): Result<[number, string | null], Context>;
  }
}

/** The sequence scripts (lua/order-*.lua), loaded once; the pop embeds BullMQ's promote. */
const PLACE = loadLua(path.join(__dirname, 'lua'), 'order-place');
const POP = loadLua(path.join(__dirname, 'lua'), 'order-pop', { 'bullmq:promote': bullmqScript('promote').content });

export type Turn = { deliver: true } | { deliver: false; parkMs: number; behind: string };

/** A key whose first delivery is a dead letter, holding back the deliveries behind it. */
export interface BlockedKey {
  key: string;
  /** The dead-lettered delivery's event id. */
  eventId: string;
  /** When it was dead-lettered. */
  since: string;
  /** Deliveries of the key waiting behind it. */
  waiting: number;
}

export interface SequencerHooks {
  /** A dead letter was passed over (`onDeadLetter: skip`). */
  skipped?(key: string, eventId: string): void;
  /** A dead letter now holds back its key (`onDeadLetter: block`). */
  blocked?(key: string, eventId: string): void;
}

/**
 * Ordered delivery for one target. Each ordering key has a sequence in Redis: the event ids of its
 * deliveries in receipt order, appended by the ingest script as it accepts each notification (so the
 * order holds across receivers). Only the delivery heading the sequence is delivered; the others were
 * added parked (delayed) and wait. When the head is delivered it leaves the sequence and wakes the next
 * (promote). A dead-lettered head either blocks the key until an operator replays, discards or releases
 * it, or (`skip`) leaves the sequence at once. A parked delivery also wakes by itself now and then and
 * repairs what a crash left: a head that is delivered or gone leaves the sequence.
 */
export function createSequencer(
  target: Target,
  connection: RedisClient,
  prefix: string,
  queue: () => DeliveryQueue | undefined,
  hooks: SequencerHooks = {},
) {
  connection.defineCommand('webhookOrderPlace', { lua: PLACE, numberOfKeys: 1 });
  connection.defineCommand('webhookOrderPop', { lua: POP });
  const blockedKey = ownKeys.orderBlocked(prefix, target.name);
  const sequenceOf = (key: string) => ownKeys.orderSequence(prefix, target.name, keyDigest(key));
  const onDeadLetter = target.order?.onDeadLetter ?? 'block';

  // The connection sends nothing while it is not ready (no offline queue): an admin request or a turn
  // right after start waits for it, as BullMQ's own calls do.
  const ready = () => whenReady(connection);

  async function stateOf(eventId: string): Promise<string> {
    const job = await queue()?.getJob(eventId);
    return job ? job.getState() : 'missing';
  }

  /**
   * Takes `eventId` off the head of the key's sequence (if it heads it) and wakes the next in line, in
   * one script call. Without the queue (a target being reconfigured) the next wakes by itself.
   */
  async function advancePast(key: string, eventId: string): Promise<boolean> {
    const q = queue();
    const k = q?.keys;
    const promoteKeys = k
      ? [k.delayed, k.wait, k.paused, k.meta, k.prioritized, k.active, k.pc, k.events, k.marker]
      : [];
    // Keys in the order promote-9 declares them (as BullMQ's own Job.promote passes them).
    if (promoteKeys.some((x) => !x)) promoteKeys.length = 0;
    const keys = [sequenceOf(key), blockedKey, ...(promoteKeys as string[])];
    const [popped] = await connection.webhookOrderPop(keys.length, ...keys, eventId, key, q ? q.toKey('') : '');
    return popped === 1;
  }

  return {
    /**
     * Whether this delivery may go now. A delivery not in its sequence (resent or replayed after it
     * was done, or released) goes at once. Otherwise it goes when it heads the sequence; before that, a
     * head that is delivered or gone is taken off (a crash between delivering and advancing), and a
     * dead-lettered head is skipped or blocks the key.
     */
    async turn(job: Pick<Job<DeliveryJob>, 'data'>): Promise<Turn> {
      const key = job.data.orderKey;
      if (key === undefined) return { deliver: true };
      await ready();
      const sequence = sequenceOf(key);
      for (;;) {
        const [position, head] = await connection.webhookOrderPlace(sequence, job.data.eventId);
        if (position <= 0 || !head) return { deliver: true };
        const state = await stateOf(head);
        if (state === 'completed' || state === 'missing' || state === 'unknown') {
          await advancePast(key, head);
          continue;
        }
        if (state === 'failed') {
          if (onDeadLetter === 'skip') {
            if (await advancePast(key, head)) hooks.skipped?.(key, head);
            continue;
          }
          if ((await connection.zadd(blockedKey, 'NX', Date.now(), key)) === 1) hooks.blocked?.(key, head);
          return { deliver: false, parkMs: PARKED_BEHIND_MS, behind: head };
        }
        return { deliver: false, parkMs: position === 1 ? PARKED_NEXT_MS : PARKED_BEHIND_MS, behind: head };
      }
    },

    /** After a successful delivery: the next delivery of its key may go. */
    async delivered(job: Pick<Job<DeliveryJob>, 'data'>): Promise<void> {
      if (job.data.orderKey === undefined) return;
      await ready();
      await advancePast(job.data.orderKey, job.data.eventId);
    },

    /**
     * After a delivery was dead-lettered: with `skip` the next of its key goes; with `block` the key is
     * held (and listed as blocked) until an operator acts. Answers which.
     */
    async deadLettered(job: Pick<Job<DeliveryJob>, 'data'>): Promise<'skipped' | 'blocked' | 'unordered'> {
      const key = job.data.orderKey;
      if (key === undefined) return 'unordered';
      await ready();
      if (onDeadLetter === 'skip') {
        if (await advancePast(key, job.data.eventId)) hooks.skipped?.(key, job.data.eventId);
        return 'skipped';
      }
      const [position] = await connection.webhookOrderPlace(sequenceOf(key), job.data.eventId);
      if (position === 0 && (await connection.zadd(blockedKey, 'NX', Date.now(), key)) === 1)
        hooks.blocked?.(key, job.data.eventId);
      return 'blocked';
    },

    /** The keys held back by a dead letter, oldest first (a key whose head is no longer a dead letter is dropped). */
    async blocked(): Promise<BlockedKey[]> {
      await ready();
      const entries = await connection.zrange(blockedKey, 0, -1, 'WITHSCORES');
      const out: BlockedKey[] = [];
      for (let i = 0; i < entries.length; i += 2) {
        const key = entries[i]!;
        const since = Number(entries[i + 1]);
        const sequence = sequenceOf(key);
        const [head, length] = await Promise.all([connection.lindex(sequence, 0), connection.llen(sequence)]);
        if (!head || (await stateOf(head)) !== 'failed') {
          await connection.zrem(blockedKey, key);
          continue;
        }
        out.push({ key, eventId: head, since: new Date(since).toISOString(), waiting: length - 1 });
      }
      return out;
    },

    /**
     * Lets a blocked key go on: its dead letter stays (to replay or discard later, then delivered
     * outside the order) and the next delivery of the key goes. Undefined when the key is not blocked.
     */
    async release(key: string): Promise<{ key: string; eventId: string } | undefined> {
      await ready();
      const head = await connection.lindex(sequenceOf(key), 0);
      if (!head || (await stateOf(head)) !== 'failed') return undefined;
      await advancePast(key, head);
      return { key, eventId: head };
    },

    /** After a dead letter was discarded: if it headed its key, the next delivery goes. */
    async discarded(job: Pick<Job<DeliveryJob>, 'data'>): Promise<void> {
      if (job.data.orderKey === undefined) return;
      await ready();
      await advancePast(job.data.orderKey, job.data.eventId);
    },

    /** How many keys are blocked, and since when the oldest (ms since 1970), for the metrics. */
    async blockedSummary(): Promise<{ count: number; oldestMs?: number }> {
      // A scrape does not wait for Redis: it keeps the last values (webhook_redis_up says why).
      if (connection.status !== 'ready') throw new Error('Redis is not ready');
      const [count, oldest] = await Promise.all([
        connection.zcard(blockedKey),
        connection.zrange(blockedKey, 0, 0, 'WITHSCORES'),
      ]);
      return { count, oldestMs: oldest[1] !== undefined ? Number(oldest[1]) : undefined };
    },
  };
}

export type Sequencer = ReturnType<typeof createSequencer>;
