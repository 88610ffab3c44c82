import type { Dispatcher } from 'undici';
import { parseRetryAfter } from './backoff';
import { PermanentDeliveryError, TransientDeliveryError } from './delivery-errors';
import { classifyNetworkError, summarise, type FailureFacts } from './failure';
import type { DeliveryResult } from '../model/jobs';
import type { Target } from '../model/target-schema';
import { stripControl } from '../logging/printable';

/** What a failure keeps of the target's answer, for the dead letter. */
const EXCERPT_BYTES = 512;
const ALWAYS_RETRIED = new Set([408, 429]);

/** A success's answer is read and dropped up to this many bytes (as undici's `dump()`), then its connection closes. */
const DISCARDED_BYTES = 128 * 1024;

/**
 * Why undici is told to stop an answer nobody reads any more (past the excerpt or the discard limit,
 * or after the deadline): the attempt has already settled, so no one ever sees it.
 */
const NO_LONGER_READ = new Error('the attempt is over; its answer is no longer read');

/**
 * One attempt's answer, as undici hands it over: settles once, with the status and latency, the
 * failure's excerpt, or the network error; by the target's timeout at the latest.
 */
export class PostAnswer implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private readonly timer: NodeJS.Timeout;
  private controller?: Dispatcher.DispatchController;
  private settled = false;
  private complete = false;
  private timedOut = false;
  private status = 0;
  private retryAfter?: string | string[];
  private received = 0;
  private readonly excerpt: Buffer[] = [];

  constructor(
    private readonly target: Target,
    private readonly resolve: (result: DeliveryResult) => void,
    private readonly reject: (err: Error) => void,
  ) {
    this.timer = setTimeout(() => this.deadline(), target.timeoutMs);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Still queued for a connection when the deadline passed: the attempt is over, so is the request.
    if (this.settled) controller.abort(NO_LONGER_READ);
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: Record<string, unknown>): void {
    if (status < 200) return; // informational: the answer is still to come
    this.status = status;
    if (status >= 300) this.retryAfter = headers['retry-after'] as string | string[] | undefined;
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    this.received += chunk.length;
    if (this.status < 300) {
      if (this.received > DISCARDED_BYTES) this.end(); // delivered; the rest is not worth reading
      return;
    }
    this.excerpt.push(chunk);
    // Enough to show why; the rest is not read: the body is cut (which closes that connection) rather than drained.
    if (this.received >= EXCERPT_BYTES) this.end();
  }

  onResponseEnd(): void {
    this.complete = true;
    this.end();
  }

  onResponseError(_c: Dispatcher.DispatchController | undefined, err: Error): void {
    this.complete = true;
    if (this.settled) return;
    // With the status in, it stands: a 2xx is delivered, and a failure's excerpt is what arrived.
    if (this.status) return this.end();
    const e = err as Error & { code?: string; cause?: { code?: string } };
    this.networkFailure(e.code ?? e.cause?.code, e.message);
  }

  /** The whole attempt took too long: what arrived stands, else it timed out. */
  private deadline(): void {
    this.timedOut = true;
    if (this.status) this.end();
    else this.networkFailure(undefined, 'timeout');
  }

  private networkFailure(code: string | undefined, message: string): void {
    const facts: FailureFacts = {
      errorClass: this.timedOut ? 'timeout' : classifyNetworkError(code),
      latencyMs: this.elapsed(),
    };
    const summary = summarise(facts, code ?? message, this.target.timeoutMs);
    this.fail(new TransientDeliveryError(summary, undefined, undefined, undefined, facts));
  }

  /** Settles on the status that arrived, and stops the answer if it is still coming. */
  private end(): void {
    if (this.settled) return;
    const status = this.status;
    if (status >= 200 && status < 300) this.succeed({ status, latencyMs: this.elapsed() });
    else this.fail(this.statusError(status));
  }

  private statusError(status: number): Error {
    // Stored for operators' screens: no terminal escapes from the target's text.
    const excerpt = stripControl(Buffer.concat(this.excerpt).subarray(0, EXCERPT_BYTES).toString('utf8'));
    const facts: FailureFacts = {
      errorClass: 'http_status',
      status,
      latencyMs: this.elapsed(),
      responseExcerpt: excerpt,
    };
    const summary = summarise(facts, '', this.target.timeoutMs);
    if (status >= 500 || ALWAYS_RETRIED.has(status) || this.target.retryStatuses.includes(status)) {
      return new TransientDeliveryError(summary, status, parseRetryAfter(this.retryAfter), excerpt, facts);
    }
    return new PermanentDeliveryError(`${summary} (not retried)`, status, excerpt, facts);
  }

  private succeed(result: DeliveryResult): void {
    this.finish();
    this.resolve(result);
  }

  private fail(err: Error): void {
    this.finish();
    this.reject(err);
  }

  private finish(): void {
    this.settled = true;
    clearTimeout(this.timer);
    // An answer still coming is cut (a request not yet started is cut when it starts).
    if (!this.complete) this.controller?.abort(NO_LONGER_READ);
  }

  private elapsed(): number {
    return Math.round(performance.now() - this.started);
  }
}
