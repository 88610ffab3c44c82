import type { BenchContext } from '../harness/context';
import { FORWARDING_MISSING } from '../harness/context';
import type { MaybeDrain, TransformPhase } from '../harness/results';
import { best, drainRun, rateOf } from './drain';

/**
 * A typical transform: a ledger's own shape from the platform's body, amounts passed on with their
 * exact text. It keeps `request_id`, by which the sink recognises each delivery.
 */
export const TYPICAL_TRANSFORM = `function transform(event) {
  const d = event.data.data || {};
  return {
    request_id: d.request_id,
    kind: event.type,
    status: d.status === undefined ? null : d.status,
    amount: d.amount === undefined ? null : d.amount,
    currency: d.currency === undefined ? null : d.currency,
    receivedAt: event.timestamp,
    environment: event.environment,
  };
}`;

/**
 * The service drains the same backlog to one target, with the typical transform and without one,
 * `rounds` times each, interleaved and alternating which goes first; the best round of each counts.
 */
export async function runTransformPhase(ctx: BenchContext, backlog: number, rounds: number): Promise<TransformPhase> {
  if (!ctx.forwarding)
    return { backlog, plain: { skipped: FORWARDING_MISSING }, transformed: { skipped: FORWARDING_MISSING } };
  const runs: { plain: MaybeDrain[]; transformed: MaybeDrain[] } = { plain: [], transformed: [] };
  for (let round = 1; round <= Math.max(1, rounds); round++) {
    const order = round % 2 === 1 ? (['plain', 'transformed'] as const) : (['transformed', 'plain'] as const);
    for (const kind of order) {
      ctx.log(`transform ${kind}: round ${round} of ${rounds}`);
      runs[kind].push(
        await drainRun(
          ctx,
          'service',
          backlog,
          `transform${kind}`,
          0,
          1,
          kind === 'transformed' ? { transform: TYPICAL_TRANSFORM } : {},
        ),
      );
    }
  }
  const phase: TransformPhase = { backlog, plain: best(runs.plain), transformed: best(runs.transformed) };
  if (rounds > 1) phase.rounds = { plain: runs.plain.map(rateOf), transformed: runs.transformed.map(rateOf) };
  return phase;
}
