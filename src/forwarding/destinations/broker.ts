import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { PermanentDeliveryError, TransientDeliveryError } from '../delivery-errors';
import { classifyNetworkError, type FailureFacts } from '../failure';
import type { DestinationTls } from '../../model/destination-schema';
import type { ErrorClass } from '../../model/jobs';
import { settlesWithin, withTimeout } from '../../model/with-timeout';
import type { Logger } from '../../logging/logger';

/** `scheme://user:pass@host` → `scheme://***@host`: a broker's error may quote the URL it was given. */
export function scrubCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi, '$1***@');
}

/**
 * A failed publish as the delivery worker records it: what happened (`errorClass`), how long it took,
 * and one readable line (credentials scrubbed). Transient unless `permanent`: a broker that refuses or
 * cannot be reached now may take the message on a later attempt, with the target's backoff.
 */
export function brokerFailure(errorClass: ErrorClass, detail: string, latencyMs: number, permanent = false): Error {
  const facts: FailureFacts = { errorClass, latencyMs };
  const line = `${scrubCredentials(detail)} after ${latencyMs} ms`;
  return permanent
    ? new PermanentDeliveryError(`${line} (not retried)`, 0, '', facts)
    : new TransientDeliveryError(line, undefined, undefined, undefined, facts);
}

/** A broker client's own error, by its code (ECONNREFUSED, ETIMEDOUT, a TLS code …), as a failure class. */
export function classifyClientError(err: unknown): ErrorClass {
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  const code = typeof e.code === 'string' ? e.code : typeof e.cause?.code === 'string' ? e.cause.code : undefined;
  const cls = classifyNetworkError(code);
  return cls === 'network' && code !== undefined && !/^E[A-Z]+$/.test(code) ? 'broker' : cls;
}

/** The message of an error, with the message of its cause when it has one. */
export function describeError(err: unknown): string {
  const e = err as Error & { cause?: unknown };
  const cause =
    e.cause instanceof Error && e.cause.message && !e.message.includes(e.cause.message) ? `: ${e.cause.message}` : '';
  return `${e.message || String(err)}${cause}`;
}

/** The PEM files of a destination's `tls`, read; an unreadable file says which setting names it. */
export function readTlsFiles(
  tls: DestinationTls | undefined,
): Pick<ConnectionOptions, 'ca' | 'cert' | 'key'> & { ca?: Buffer; cert?: Buffer; key?: Buffer } {
  const read = (file: string | undefined, setting: string): Buffer | undefined => {
    if (file === undefined) return undefined;
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(`destination.tls.${setting}: cannot read ${file} (${(err as Error).message})`);
    }
  };
  return { ca: read(tls?.caFile, 'caFile'), cert: read(tls?.certFile, 'certFile'), key: read(tls?.keyFile, 'keyFile') };
}

/** The first and longest waits between connection attempts to a broker that is down. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 5_000;

/** What a destination's connection tells the log: that it was lost (or could not be opened), and that it is back. */
export interface ConnectionNotices {
  lost(reason: string): void;
  restored(): void;
}

/**
 * One line when a target's broker connection goes down and one when it is back, however many
 * deliveries fail in between (each of those is already a throttled retry line of the worker). A
 * connection that flaps (a broker that closes each channel it opens) is still one line of each per
 * interval, with a count.
 */
export function connectionNotices(logger: Logger | undefined, target: string, broker: string): ConnectionNotices {
  let down = false;
  return {
    lost(reason) {
      if (down) return;
      down = true;
      logger?.repeated('warn', `broker-lost:${target}`, `${broker} connection lost; reconnecting with backoff`, {
        target,
        error: scrubCredentials(reason),
      });
    },
    restored() {
      if (!down) return;
      down = false;
      logger?.repeated('info', `broker-restored:${target}`, `${broker} connection restored`, { target });
    },
  };
}

/**
 * One connection to a broker for a target's deliveries in this process, opened by the first send
 * (lazily: a target whose broker is down does not stop the service starting), shared by every send,
 * and opened again after it is lost, no sooner than a backoff after the last failed attempt (doubling
 * to {@link RECONNECT_MAX_MS}), so a broker that is down is not hammered by every delivery: a send in
 * that window fails at once with the reason the last attempt gave, and its job retries with the
 * target's backoff.
 */
export class LazyConnection<C> {
  private current?: Promise<C>;
  private conn?: C;
  private failures = 0;
  private retryAt = 0;
  private lastError?: unknown;
  private closed = false;

  constructor(
    private readonly open: () => Promise<C>,
    /** Closes the connection politely (waits for the broker to answer). */
    private readonly shut: (conn: C) => Promise<void>,
    /** Drops the connection at once (destroys its socket), for a broker that does not answer the polite close. */
    private readonly cut: (conn: C) => void,
    private readonly notices?: ConnectionNotices,
  ) {}

  /** The open connection, opening it when there is none. */
  get(): Promise<C> {
    if (this.closed) return Promise.reject(new Error('the destination is closed (worker stopping)'));
    if (this.current) return this.current;
    if (Date.now() < this.retryAt) return Promise.reject(this.lastError);
    const opening = this.open().then(
      (conn) => {
        this.failures = 0;
        if (this.current === opening) {
          this.conn = conn;
          this.notices?.restored();
        } else if (this.closed) this.cut(conn);
        return conn;
      },
      (err: unknown) => {
        this.failures += 1;
        this.lastError = err;
        this.retryAt = Date.now() + Math.min(RECONNECT_MAX_MS, RECONNECT_FIRST_MS * 2 ** (this.failures - 1));
        if (this.current === opening) this.current = undefined;
        if (!this.closed) this.notices?.lost(describeError(err));
        throw err;
      },
    );
    this.current = opening;
    return opening;
  }

  /**
   * The open connection within `ms`: a broker that accepts the TCP connection and then answers
   * nothing (frozen) fails the send by then with ETIMEDOUT; the opening goes on for the next send.
   * A failure is the send's, classified, its latency counted from `startedAt` (`performance.now()`).
   */
  async getWithin(ms: number, broker: string, startedAt: number): Promise<C> {
    const timeout = () => Object.assign(new Error(`no connection within ${ms} ms (timeoutMs)`), { code: 'ETIMEDOUT' });
    try {
      return await withTimeout(this.get(), ms, timeout);
    } catch (err) {
      const latencyMs = Math.round(performance.now() - startedAt);
      throw brokerFailure(classifyClientError(err), `cannot connect to ${broker}: ${describeError(err)}`, latencyMs);
    }
  }

  /** Forgets `conn` (it closed or failed): the next send opens a new one. */
  lost(conn: C, reason = 'closed'): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    this.current = undefined;
    if (!this.closed) this.notices?.lost(reason);
  }

  /**
   * Closes the connection within `ms`; past that (a frozen broker never answers a close) its socket
   * is destroyed, so nothing of it outlives the shutdown. No send opens one again.
   */
  async close(ms: number): Promise<void> {
    this.closed = true;
    const conn = this.conn;
    this.conn = undefined;
    this.current = undefined;
    if (conn === undefined) return;
    if (!(await settlesWithin(this.shut(conn), ms))) this.cut(conn);
  }
}

/** Milliseconds left of a send's `timeoutMs` that started at `started` (performance.now()), at least 1. */
export function remainingMs(timeoutMs: number, started: number): number {
  return Math.max(1, Math.round(timeoutMs - (performance.now() - started)));
}

/** The message's `webhook-timestamp` (seconds), or now. */
export function messageSeconds(headers: Record<string, string>): number {
  const stamp = Number(headers['webhook-timestamp']);
  return Number.isFinite(stamp) && stamp > 0 ? stamp : Math.floor(Date.now() / 1000);
}
