import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/** A span processor that keeps every ended span, to encode them or compare them with what was sent. */
export class CollectSpans implements SpanProcessor {
  readonly spans: ReadableSpan[] = [];
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    this.spans.push(span);
  }
  forceFlush = () => Promise.resolve();
  shutdown = () => Promise.resolve();
}
