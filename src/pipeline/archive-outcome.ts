import { ARCHIVE_DELIVERY, type DeliveryEnd, type DeliveryOutcomeRecord } from '../model/archive';
import { ownKeys } from '../model/names';
import type { RedisClient } from '../redis/connect';

/**
 * Appends how a delivery ended to the archive stream (when the archive is on; a no-op otherwise), for
 * the archiver to add to the event's archived story. It runs after the delivery's own outcome is
 * stored, so a failure here never undoes a delivery: it is passed to `onError` and the archive lacks
 * that outcome.
 */
export type RecordDeliveryEnd = (
  end: { eventId: string; target: string; state: DeliveryEnd; attempts: number },
  onError?: (err: Error) => void,
) => Promise<void>;

export function createDeliveryEndRecorder(
  connection: RedisClient,
  prefix: string,
  enabled: boolean,
): RecordDeliveryEnd {
  if (!enabled) return () => Promise.resolve();
  const stream = ownKeys.archive(prefix);
  return async (end, onError) => {
    const record: DeliveryOutcomeRecord = { ...end, at: new Date().toISOString() };
    await connection
      .xadd(stream, '*', 'd', ARCHIVE_DELIVERY, 'r', JSON.stringify(record))
      .then(() => undefined)
      .catch((err: Error) => onError?.(err));
  };
}
