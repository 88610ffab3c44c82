import type { LatencySummary } from './stats';

/** A presigned request as the load generator reads it from the requests file. */
export interface WireRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * `saturate`: autocannon, closed loop, as fast as the server answers (the highest sustained rate).
 * `paced`: open loop at a fixed rate, each request sent when due whatever the earlier ones are doing,
 * so latency is not hidden by the generator waiting (coordinated omission). autocannon's own rate
 * limit sends each second's quota in a burst at the start of the second, which is not a steady rate.
 */
export type LoadSpec =
  | { mode: 'saturate'; url: string; requestsFile: string; amount: number; connections: number; timeoutSec: number }
  | {
      mode: 'paced';
      url: string;
      requestsFile: string;
      rate: number;
      connections: number;
      timeoutSec: number;
      windowSec: number;
    };

export interface LoadWindow {
  fromSec: number;
  ack: LatencySummary;
}

export interface LoadResult {
  type: 'result';
  mode: LoadSpec['mode'];
  sent: number;
  ok: number;
  non2xx: number;
  errors: number;
  /** First request sent to last answer received. */
  durationSec: number;
  /** 2xx answers per second over the duration. */
  okPerSec: number;
  ack: LatencySummary;
  /** CPU time the load generator itself used (user + system). */
  cpuMs: number;
  /** Paced only: how late requests left compared with their schedule (a starved generator shows here). */
  lagMs?: { p99: number; max: number };
  /** Paced only: wall-clock send time (ms since the epoch, sub-millisecond) and status of request i. */
  sentAtMs?: number[];
  status?: number[];
  /** Paced only: ack latency per window of `windowSec`, to see whether it drifts. */
  windows?: LoadWindow[];
}
