import { maskUrl } from '../logging/mask-url';
import { ServiceError } from '../model/errors';

/**
 * Whether tracing is on, from the standard OpenTelemetry variables: an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`) turns it on, unless
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`, and which exporter package sends the spans.
 * Everything else (the sampler, the resource, the collector's headers, timeout and compression, the
 * batches' `OTEL_BSP_*`) is read by the SDK itself, as everywhere else.
 */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

export type TracingSettings = { on: false; why: string } | { on: true; endpoint: string; protocol: OtlpProtocol };

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
  return { on: true, endpoint, protocol: protocol as OtlpProtocol };
}

/** A tracing variable the service cannot honour: refused at start, like any other invalid setting. */
export class TracingConfigError extends ServiceError {
  readonly code = 'invalid_config';
  readonly status = 400;
}

/** The endpoint for a log line: masked as every URL shown is, and its whole query string too. */
export function maskedEndpoint(endpoint: string): string {
  return maskUrl(endpoint).replace(/\?.*$/, '?***');
}
