export interface SinkStats {
  /** Requests received, retries included. */
  received: number;
  /** Distinct events received. */
  unique: number;
  /** Wall-clock time (ms since the epoch) the first and the latest new event arrived; 0 before any. */
  firstAtMs: number;
  lastAtMs: number;
}

export type SinkCommand = { seq: number; command: 'stats' | 'reset' | 'arrivals' };

export interface SinkReply {
  type: 'reply';
  seq: number;
  stats: SinkStats;
  /** With `arrivals`: [event key (request_id), first arrival time in ms since the epoch]. */
  arrivals?: [string, number][];
}
