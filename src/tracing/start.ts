import { tracingSettings, type TracingSettings } from './settings';
import { installTracing } from './tracing';

/** Where the SDK's own complaints go (an export the collector refused, a full queue): one line per interval. */
export type TracingWarn = (key: string, message: string, fields: Record<string, unknown>) => void;

export interface RunningTracing {
  /** What was started, for the start-up log line. */
  readonly settings: Extract<TracingSettings, { on: true }>;
  /** Exports what is held and stops; the hooks are no-ops again. */
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry SDK when the environment configures an OTLP endpoint (see settings.ts) and
 * installs the hooks of tracing.ts; otherwise loads nothing and returns undefined. The SDK packages
 * are imported here, only then, so a service without tracing neither loads nor runs any of it.
 */
export async function startTracing(
  env: Record<string, string | undefined>,
  warn: TracingWarn,
  defaultServiceName = 'webhook-receiver',
): Promise<RunningTracing | undefined> {
  const settings = tracingSettings(env);
  if (!settings.on) return undefined;
  const api = await import('@opentelemetry/api');
  const { resourceFromAttributes, detectResources, envDetector } = await import('@opentelemetry/resources');
  const { ATTR_SERVICE_NAME } = await import('@opentelemetry/semantic-conventions');
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const { OTLPTraceExporter } =
    settings.protocol === 'http/json'
      ? await import('@opentelemetry/exporter-trace-otlp-http')
      : await import('@opentelemetry/exporter-trace-otlp-proto');
  const { createSdkTracing } = await import('./sdk');

  api.diag.setLogger(
    {
      error: (message) =>
        warn(`otel:${message}`, 'tracing: the OpenTelemetry SDK reported an error (spans may be lost)', {
          error: message,
        }),
      warn: (message) => warn(`otel:${message}`, 'tracing: the OpenTelemetry SDK warned', { warning: message }),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    api.DiagLogLevel.WARN,
  );
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: defaultServiceName }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  // The exporter reads OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, _TIMEOUT and _COMPRESSION itself, the batch
  // processor OTEL_BSP_*, the provider the sampler (OTEL_TRACES_SAMPLER, _ARG); a refused export or a
  // full queue reaches the diagnostic logger above.
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.endpoint }))],
  });
  installTracing(createSdkTracing(api, provider.getTracer('webhook-receiver')));
  return {
    settings,
    async shutdown() {
      installTracing(undefined);
      await provider.shutdown();
    },
  };
}
