import { UsageError } from '../errors';
import { parseArgs } from 'node:util';
import { environmentNames } from '../../model/environments';
import { isExpectationState, type Expectation } from '../../reconciliation/expectation';
import { createExpectations, type Expectations } from '../../reconciliation/expectations';
import type { OperatorContext } from '../operator-context';
import { formatTable } from '../table';
import { withQueues } from '../with-queues';
import { withArchiveIfSet } from './archive';

/** Expectations as the CLI lists them; one told from the archive (Redis no longer holds it) is marked so. */
export function expectationsTable(rows: readonly Expectation[]): string {
  return formatTable(
    ['ID', 'DUE (UTC)', 'REQUEST_ID', 'TYPE', 'ENVIRONMENT', 'STATE', 'INQUIRIES', 'EVENT'],
    rows.map((e) => [
      e.id,
      e.dueBy,
      e.requestId,
      e.eventType,
      e.environment,
      e.source === 'archive' ? `${e.state} (archive)` : e.state,
      e.attempts,
      e.metBy ?? e.inquiryEventId ?? '',
    ]),
  );
}

/**
 * `expect <event type> <request_id> (--due-in S | --due-by TIME) [--environment E]`: expects a
 * notification, as the admin API does; `expect list [--state S] [--request-id R] [--json]`;
 * `expect cancel <id>`. Changes are audited as the CLI's operator.
 */
export function expectCommand(ctx: OperatorContext, args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'due-in': { type: 'string' },
      'due-by': { type: 'string' },
      environment: { type: 'string' },
      state: { type: 'string' },
      'request-id': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const [first, second] = positionals;
  return withQueues(ctx.config, (pipeline) =>
    withArchiveIfSet(ctx, async (archive) => {
      const expectations = createExpectations({
        pipeline,
        settings: ctx.config.expectations,
        environments: environmentNames(ctx.config),
        logger: ctx.logger,
        archive,
      });
      const print = (rows: readonly Expectation[]) =>
        ctx.out(values.json ? JSON.stringify(rows, null, 2) : expectationsTable(rows));
      if (first === 'list') return list(expectations, values, print);
      if (first === 'cancel') {
        if (!second) throw new UsageError('give the expectation id: expect cancel <id>');
        print([await expectations.cancel(ctx.actor, second)]);
        return 0;
      }
      if (!first || !second) {
        throw new UsageError('give the event type and request_id: expect <event type> <request_id> --due-in <seconds>');
      }
      const { expectation, created } = await expectations.expect(ctx.actor, {
        eventType: first,
        requestId: second,
        ...(values.environment ? { environment: values.environment } : {}),
        ...(values['due-by'] ? { dueBy: values['due-by'] } : {}),
        ...(values['due-in'] !== undefined ? { dueInSeconds: Number(values['due-in']) } : {}),
      });
      print([expectation]);
      if (!created && !values.json) ctx.out('(open already: the same expectation, unchanged)');
      return 0;
    }),
  );
}

async function list(
  expectations: Expectations,
  values: { state?: string; 'request-id'?: string },
  print: (rows: readonly Expectation[]) => void,
): Promise<number> {
  if (values.state !== undefined && !isExpectationState(values.state)) {
    throw new UsageError(`--state: one of open, overdue, met, missing_notification, unresolved, cancelled`);
  }
  const state = values.state;
  const rows = values['request-id']
    ? (await expectations.ofRequest(values['request-id'])).filter((e) => !state || e.state === state)
    : await expectations.list({ state, limit: 200 });
  print(rows);
  return 0;
}
