/**
 * How long a parked ordered delivery sleeps before it checks its turn by itself. The delivery before
 * it wakes it as soon as it is done (promote), so these bound only the recovery from a worker that
 * died between finishing a delivery and waking the next one, and the polling of keys held behind a
 * dead letter.
 */

/** A delivery that does not head its key's sequence when it is received. */
export const PARKED_AT_INGEST_MS = 15_000;
/** The next in line, behind a delivery in flight or waiting for a retry. */
export const PARKED_NEXT_MS = 15_000;
/** Further back in line, or behind a dead letter that blocks its key. */
export const PARKED_BEHIND_MS = 120_000;
