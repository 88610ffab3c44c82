import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { BatchExporter } from './encoding-span-processor';
import type { SpanBatch } from './otlp-batch';
import type { OtlpProtocol } from './settings';

/**
 * The OTLP/HTTP exporter of `@opentelemetry/exporter-trace-otlp-*` (the same delegate: endpoint,
 * OTEL_EXPORTER_OTLP_* headers, timeout and compression, retries with backoff, the response's
 * partial successes), handed batches already encoded.
 */
export function createBatchExporter(url: string, protocol: OtlpProtocol): BatchExporter {
  const json = protocol === 'http/json';
  const options = convertLegacyHttpOptions({ url }, 'TRACES', 'v1/traces', {
    'Content-Type': json ? 'application/json' : 'application/x-protobuf',
  });
  // The collector's answer (its partial successes, which the delegate logs) is read by the library's own serializer.
  const { deserializeResponse } = json ? JsonTraceSerializer : ProtobufTraceSerializer;
  const serializer = { serializeRequest: (batch: SpanBatch) => batch.request(), deserializeResponse };
  const delegate = createOtlpHttpExportDelegate(
    options,
    serializer,
    'otlp_http_span_exporter',
    { name: 'span', countItems: (batch: SpanBatch) => batch.count },
    undefined,
  );
  return new OTLPExporterBase<SpanBatch>(delegate);
}
