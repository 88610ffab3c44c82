import { context, TraceFlags } from '@opentelemetry/api';
import { ExportResultCode, suppressTracing, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SpanBatch } from './otlp-batch';
import type { BatchSettings, OtlpProtocol } from './settings';

/** Sends one batch (the OTLP exporter's transport: headers, compression, timeout and retries). */
export interface BatchExporter {
  export(batch: SpanBatch, done: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
}

/**
 * The batch span processor's behaviour (OTEL_BSP_*: a batch leaves when it is full or after the
 * delay, one export at a time, spans beyond the queue's size dropped and counted), but each span
 * is encoded to OTLP as it ends. The SDK's BatchSpanProcessor keeps the span objects (and their
 * attributes, links and events) until their batch is sent, long enough for the young-generation GC
 * to copy them, and then walks them again to encode the batch; here they die young, and what waits
 * is one buffer of bytes per batch.
 */
export class EncodingSpanProcessor implements SpanProcessor {
  private readonly batches: SpanBatch[] = [];
  private queued = 0;
  private dropped = 0;
  private timer: NodeJS.Timeout | undefined;
  private exporting: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly protocol: OtlpProtocol,
    private readonly exporter: BatchExporter,
    private readonly settings: BatchSettings,
    private readonly report: (message: string) => void,
  ) {}

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.stopped || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.queued >= this.settings.maxQueueSize) {
      if (this.dropped++ === 0)
        this.report(`dropping spans: the export queue (OTEL_BSP_MAX_QUEUE_SIZE ${this.settings.maxQueueSize}) is full`);
      return;
    }
    if (this.dropped > 0) {
      this.report(
        `dropped ${this.dropped} spans: the export queue (OTEL_BSP_MAX_QUEUE_SIZE ${this.settings.maxQueueSize}) was ` +
          `full`,
      );
      this.dropped = 0;
    }
    let open = this.batches[this.batches.length - 1];
    if (open === undefined || open.count >= this.settings.maxExportBatchSize) {
      open = new SpanBatch(this.protocol);
      this.batches.push(open);
    }
    open.add(span);
    this.queued++;
    this.schedule();
  }

  /** Exports every waiting batch, one after another. */
  async forceFlush(): Promise<void> {
    this.clearTimer();
    while (this.exporting !== undefined || this.batches.length > 0) {
      await (this.exporting ?? this.exportNext());
    }
  }

  async shutdown(): Promise<void> {
    if (this.stopped) return;
    await this.forceFlush();
    this.stopped = true;
    await this.exporter.shutdown();
  }

  private schedule(): void {
    if (this.exporting !== undefined) return;
    if (this.queued >= this.settings.maxExportBatchSize) {
      void this.exportNext();
      return;
    }
    if (this.timer !== undefined || this.queued === 0) return;
    this.timer = setTimeout(() => void this.exportNext(), this.settings.scheduledDelayMillis);
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private exportNext(): Promise<void> {
    this.clearTimer();
    const batch = this.batches.shift();
    if (batch === undefined) return Promise.resolve();
    this.queued -= batch.count;
    const exporting = this.send(batch).then(
      () => undefined,
      (err: unknown) =>
        this.report(`an export of ${batch.count} spans failed: ${err instanceof Error ? err.message : String(err)}`),
    );
    this.exporting = exporting.finally(() => {
      this.exporting = undefined;
      this.schedule();
    });
    return this.exporting;
  }

  private async send(batch: SpanBatch): Promise<void> {
    for (const resource of batch.groups.keys())
      if (resource.asyncAttributesPending) await resource.waitForAsyncAttributes?.();
    await new Promise<void>((resolve, reject) => {
      const timeout = setTimeout(
        () => reject(new Error(`no answer within OTEL_BSP_EXPORT_TIMEOUT (${this.settings.exportTimeoutMillis} ms)`)),
        this.settings.exportTimeoutMillis,
      );
      // The exporter's own HTTP request is never traced.
      context.with(suppressTracing(context.active()), () =>
        this.exporter.export(batch, (result) => {
          clearTimeout(timeout);
          if (result.code === ExportResultCode.SUCCESS) resolve();
          else reject(result.error ?? new Error('the exporter reported a failure'));
        }),
      );
    });
  }
}
