import { maskUrl } from '../logging/mask-url';
/**
 * Whether tracing is on, from the standard OpenTelemetry variables: an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`) turns it on, unless
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. The exporter, the sampler
 * (`OTEL_TRACES_SAMPLER`, `_ARG`), the service name (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`),
 * and the collector's headers (`OTEL_EXPORTER_OTLP_HEADERS`, `…_TRACES_HEADERS`, `_TIMEOUT`,
 * `_COMPRESSION`) are read by the SDK itself, as everywhere else; the batch settings (`OTEL_BSP_*`)
 * here, for the span processor of encoding-span-processor.ts.
 */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** The batch span processor's settings, with the specification's names and defaults. */
export interface BatchSettings {
  /** Ended spans waiting to be sent; beyond it they are dropped and counted. @defaultValue 2048 */
  maxQueueSize: number;
  /** Spans per export request; a full batch leaves at once. @defaultValue 512 */
  maxExportBatchSize: number;
  /** The longest a span waits for its batch to fill. @defaultValue 5000 */
  scheduledDelayMillis: number;
  /** How long one export may take before the next batch goes. @defaultValue 30000 */
  exportTimeoutMillis: number;
}

export type TracingSettings =
  { on: false; why: string } | { on: true; endpoint: string; protocol: OtlpProtocol; batch: BatchSettings };

const PROTOCOLS: readonly string[] = ['http/protobuf', 'http/json'];

export function tracingSettings(env: Record<string, string | undefined>): TracingSettings {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { on: false, why: 'OTEL_SDK_DISABLED=true' };
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return { on: false, why: 'OTEL_TRACES_EXPORTER=none' };
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!traces && !base) return { on: false, why: 'no OTEL_EXPORTER_OTLP_ENDPOINT' };
  // As the specification says: the signal's own endpoint is used as given, the base one gets /v1/traces.
  const endpoint = traces || `${base!.replace(/\/+$/, '')}/v1/traces`;
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
    env.OTEL_EXPORTER_OTLP_PROTOCOL ??
    'http/protobuf'
  ).trim();
  if (!PROTOCOLS.includes(protocol)) {
    throw new TracingConfigError(
      `OTEL_EXPORTER_OTLP_PROTOCOL: ${protocol} is not supported; use http/protobuf or http/json`,
    );
  }
  return { on: true, endpoint, protocol: protocol as OtlpProtocol, batch: batchSettings(env) };
}

function batchSettings(env: Record<string, string | undefined>): BatchSettings {
  const maxQueueSize = count(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048);
  return {
    maxQueueSize,
    // As the SDK does: a batch never holds more than the queue.
    maxExportBatchSize: Math.min(count(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512), maxQueueSize),
    scheduledDelayMillis: count(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000),
    exportTimeoutMillis: count(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30000),
  };
}

function count(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1)
    throw new TracingConfigError(`${name}: expected a whole number of at least 1, got ${raw}`);
  return value;
}

/** A tracing variable the service cannot honour: refused at start, like any other invalid setting. */
export class TracingConfigError extends Error {
  override readonly name = 'TracingConfigError';
}

/** The endpoint for a log line: masked as every URL shown is, and its whole query string too. */
export function maskedEndpoint(endpoint: string): string {
  return maskUrl(endpoint).replace(/\?.*$/, '?***');
}
