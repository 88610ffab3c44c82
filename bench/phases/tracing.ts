import { FORWARDING_MISSING, type BenchContext } from '../harness/context';
import { OtlpSink } from '../harness/otlp-sink';
import type { DrainFigures, MaybeDrain, TracingPhase } from '../harness/results';
import { drainRun } from './drain';
import { ingestOffOn } from './ingest';

/**
 * The service with tracing off and on, in the same run: ingest (ROLE=receiver, closed loop) and
 * drain (ROLE=worker) alternate off and on for the phases' rounds, the best round of each counts,
 * and the ratio is on ÷ off. On: every span sampled (`always_on`) and exported over OTLP/HTTP
 * (protobuf, the default protocol) to a local sink that answers at once. The drain's backlog is
 * queued by the harness without a stored trace, so each attempt starts its own trace: the same
 * spans, exports and header per delivery as one joining a notification's trace.
 */
export async function runTracingPhase(ctx: BenchContext): Promise<TracingPhase> {
  const sink = await OtlpSink.start();
  try {
    const on: BenchContext = {
      ...ctx,
      options: {
        ...ctx.options,
        serviceEnv: {
          ...ctx.options.serviceEnv,
          OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint,
          OTEL_TRACES_SAMPLER: 'always_on',
        },
      },
    };
    const off: BenchContext = { ...ctx, options: { ...ctx.options, serviceEnv: withoutOtel(ctx.options.serviceEnv) } };
    const ingest = await ingestOffOn({ off, on }, 'tracing');
    const drain: { off: MaybeDrain[]; on: MaybeDrain[] } = { off: [], on: [] };
    const drainRounds = Math.max(1, ctx.options.drain.rounds);
    for (let round = 1; round <= drainRounds; round++) {
      const order: ('off' | 'on')[] = round % 2 === 1 ? ['off', 'on'] : ['on', 'off'];
      for (const mode of order) {
        ctx.log(`tracing ${mode}: drain round ${round} of ${drainRounds}`);
        drain[mode].push(
          ctx.forwarding
            ? await drainRun(mode === 'on' ? on : off, 'service', ctx.options.drain.backlog, `trace${mode}`)
            : { skipped: FORWARDING_MISSING },
        );
      }
    }
    const bestDrain = (runs: MaybeDrain[]): MaybeDrain => {
      const done = runs.filter((r): r is DrainFigures => !('skipped' in r));
      return done.length === 0
        ? (runs[0] ?? { skipped: 'no round ran' })
        : done.reduce((a, b) => (b.eventsPerSec > a.eventsPerSec ? b : a));
    };
    const result: TracingPhase = {
      ingest,
      drain: { off: bestDrain(drain.off), on: bestDrain(drain.on) },
      exports: sink.exports,
      exportedMB: Math.round((sink.bytes / 1024 / 1024) * 10) / 10,
    };
    ctx.log(`tracing: ${sink.exports} OTLP exports, ${result.exportedMB} MB received by the local collector`);
    return result;
  } finally {
    await sink.stop();
  }
}

function withoutOtel(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('OTEL_')));
}
