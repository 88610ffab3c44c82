import { parseArgs } from 'node:util';
import { createDeadLetters, NotDeadLetterError, type DeadLetterFilter } from '../../operations/dead-letters';
import { errorCode, UsageError } from '../errors';
import { parseOperatorTime } from '../../operations/time';
import { recoveryFor, type OperatorContext } from '../operator-context';
import { formatTable } from '../table';
import { withQueues } from '../with-queues';

function parseTime(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseOperatorTime(value);
  if (Number.isNaN(ms)) throw new UsageError(`not a time: ${value} (ISO 8601 or epoch milliseconds)`);
  return ms;
}

/** One `dlq discard` id: its line of output, `discarded` or why not. */
async function discardOne(id: string, discard: (target: string, eventId: string) => Promise<unknown>): Promise<string> {
  const slash = id.indexOf('/');
  if (slash <= 0) return `not found  ${id}  (give <target>/<event id>)`;
  try {
    await discard(id.slice(0, slash), id.slice(slash + 1));
    return `discarded  ${id}`;
  } catch (err) {
    if (err instanceof NotDeadLetterError) return `not failed ${id}  (its delivery is ${err.state})`;
    const code = errorCode(err);
    if (code === 'not_found' || code === 'unknown_target') return `not found  ${id}  (${(err as Error).message})`;
    throw err;
  }
}

/** `dlq list`, `dlq replay` and `dlq discard`, straight against Redis with the service's configuration. */
export async function deadLetterCommand(ctx: OperatorContext, args: string[]): Promise<number> {
  const { config, out } = ctx;
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      target: { type: 'string' },
      'event-type': { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      limit: { type: 'string' },
      all: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const filter: DeadLetterFilter = {
    target: values.target,
    eventType: values['event-type'],
    from: parseTime(values.from),
    to: parseTime(values.to),
    limit: values.limit ? Number(values.limit) : undefined,
  };
  return withQueues(config, async (pipeline) => {
    const deadLetters = createDeadLetters(pipeline);
    if (sub === 'list') {
      const items = await deadLetters.list(filter);
      if (values.json) out(JSON.stringify(items, null, 2));
      else {
        out(
          formatTable(
            ['ID', 'EVENT TYPE', 'FAILED AT', 'ATTEMPTS', 'STATUS', 'ERROR'],
            items.map((d) => [
              d.id,
              d.eventType,
              d.failedAt,
              d.attempts,
              d.lastFailure?.status,
              d.lastFailure?.error ?? d.reason,
            ]),
          ),
        );
        out(`${items.length} dead letter(s)`);
      }
      return 0;
    }
    if (sub === 'replay') {
      if (!values.all && positionals.length === 0)
        throw new UsageError('name dead letters to replay (<target>/<job id> …) or pass --all (with optional filters)');
      const { limit: _limit, ...matching } = filter;
      const result = await recoveryFor(ctx, pipeline).replayDeadLetters(
        ctx.actor,
        values.all ? { all: true, ...matching } : { ids: positionals },
      );
      for (const id of result.replayed) out(`replayed   ${id}`);
      for (const id of result.notFound) out(`not found  ${id}`);
      return result.notFound.length ? 1 : 0;
    }
    if (sub === 'discard') {
      if (positionals.length === 0) throw new UsageError('name dead letters to discard (<target>/<event id> …)');
      const recovery = recoveryFor(ctx, pipeline);
      let failed = 0;
      for (const id of positionals) {
        const outcome = await discardOne(id, (target, eventId) =>
          recovery.discardDeadLetter(ctx.actor, target, eventId),
        );
        out(outcome);
        if (!outcome.startsWith('discarded')) failed++;
      }
      return failed ? 1 : 0;
    }
    throw new UsageError('dlq takes list, replay or discard');
  });
}
