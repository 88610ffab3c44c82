import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createMasker } from '../../logging/mask';
import { eventIdsForRequest, findEvent } from '../../operations/event-lookup';
import { withArchiveIfSet } from './archive';
import { expectationsTable } from './expect';
import { createExpectations } from '../../reconciliation/expectations';
import { environmentNames } from '../../model/environments';
import { printEvent } from './event-output';
import { CorrectionsDisabledError, createQuarantine } from '../../operations/quarantine';
import { summariseQueues } from '../../monitoring/queue-summary';
import { createBlockedKeys } from '../../operations/blocked-keys';
import { errorCode, UsageError } from '../errors';
import type { ResendOutcome } from '../../operations/resend';
import { createTargetControl } from '../../operations/targets';
import { recoveryFor, type OperatorContext } from '../operator-context';
import { formatTable } from '../table';
import { withQueues } from '../with-queues';

/** `queues`: every queue's counts in a table. */
export function queuesCommand({ config, out, logger }: OperatorContext): Promise<number> {
  return withQueues(config, async (pipeline) => {
    const summaries = await summariseQueues(pipeline, logger);
    out(
      formatTable(
        ['QUEUE', 'WAITING', 'ACTIVE', 'DELAYED', 'FAILED', 'COMPLETED', 'OLDEST WAITING', 'PAUSED'],
        summaries.map((s) => [
          s.queue,
          s.counts.waiting,
          s.counts.active,
          s.counts.delayed,
          s.counts.failed,
          s.counts.completed,
          `${Math.round(s.oldestWaitingSeconds)} s`,
          s.paused ? 'yes' : '',
        ]),
      ),
    );
    return 0;
  });
}

const RESEND_LABELS: Record<ResendOutcome, string> = {
  resent: 'resent     ',
  in_progress: 'in progress',
  filtered: 'filtered   ',
};

/** `event resend <event id> [--target <name>]`: a new attempt series with the same webhook-id. */
function resendCommand(ctx: OperatorContext, args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { target: { type: 'string' } } });
  const [eventId] = positionals;
  if (!eventId || positionals.length > 1)
    throw new UsageError('give one event id: event resend <event id> [--target <name>]');
  return withQueues(ctx.config, async (queues) => {
    const result = await recoveryFor(ctx, queues).resendEvent(ctx.actor, eventId, values.target);
    for (const t of result.targets) ctx.out(`${RESEND_LABELS[t.outcome]}  ${t.target}/${eventId}`);
    if (result.targets.length === 0) ctx.out(`${eventId}: no target subscribes to its type`);
    // A filtered target among several is the filter at work; nothing resent at all is a failure.
    return result.targets.some((t) => t.outcome === 'resent') &&
      result.targets.every((t) => t.outcome !== 'in_progress')
      ? 0
      : 1;
  });
}

/**
 * `event <event id>` or `event --request-id <id>` [--target T] [--json]: where an event is and each
 * delivery's attempts (T's first), as the console's event page shows it, and a request_id's expectations
 * after its events; `--json` prints the admin API's event view, one JSON document per line.
 */
export function eventCommand(ctx: OperatorContext, args: string[]): Promise<number> {
  if (args[0] === 'resend') return resendCommand(ctx, args.slice(1));
  const { config, out } = ctx;
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'request-id': { type: 'string' },
      target: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  return withQueues(config, (pipeline) =>
    withArchiveIfSet(ctx, async (archive) => {
      const mask = createMasker(config.sensitiveFields);
      const requestId = values['request-id'];
      const ids = requestId ? await eventIdsForRequest(pipeline, requestId, archive) : positionals;
      const expected = requestId
        ? await createExpectations({
            pipeline,
            settings: config.expectations,
            environments: environmentNames(config),
            logger: ctx.logger,
            archive,
          }).ofRequest(requestId)
        : [];
      if (ids.length === 0 && expected.length === 0)
        throw new UsageError('give an event id, or --request-id <platform request_id>');
      let missing = 0;
      for (const id of ids) {
        const event = await findEvent(pipeline, id, mask, archive);
        if (!event) missing++;
        if (values.json) out(JSON.stringify(event ?? { eventId: id, error: 'not_found' }));
        else if (event) printEvent(event, out, values.target);
        else out(`${id}: not found`);
      }
      // The JSON form stays one event view per line; `expect list --request-id R --json` gives these.
      if (expected.length > 0 && !values.json)
        out(`expected for request_id ${requestId}:\n${expectationsTable(expected)}`);
      return missing ? 1 : 0;
    }),
  );
}

/** `quarantine list` and `quarantine replay <id> [--body FILE]`. */
export function quarantineCommand(ctx: OperatorContext, args: string[]): Promise<number> {
  const { config, out } = ctx;
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { body: { type: 'string' }, limit: { type: 'string' } },
  });
  return withQueues(config, async (pipeline) => {
    if (sub === 'list') {
      const items = await createQuarantine(pipeline, { logger: ctx.logger }).list(
        values.limit ? Number(values.limit) : 100,
      );
      out(
        formatTable(
          ['ID', 'EVENT TYPE', 'ENVIRONMENT', 'RECEIVED AT', 'REASON', 'BYTES', 'ERRORS'],
          items.map((q) =>
            'unreadable' in q
              ? [q.id, '', '', '', '', '', `unreadable: ${q.unreadable}`]
              : [q.id, q.eventType, q.environment, q.receivedAt, q.reason, q.bodyBytes, q.errors.join('; ')],
          ),
        ),
      );
      const unreadable = items.filter((q) => 'unreadable' in q).length;
      out(`${items.length} quarantined${unreadable ? `, ${unreadable} of them unreadable` : ''}`);
      return 0;
    }
    if (sub === 'replay') {
      if (positionals.length === 0) throw new UsageError('name the quarantined ids to replay');
      if (values.body !== undefined && !config.adminAllowCorrections) throw new CorrectionsDisabledError();
      const body = values.body === undefined ? undefined : readFileSync(values.body === '-' ? 0 : values.body, 'utf8');
      const results = await recoveryFor(ctx, pipeline).replayQuarantined(ctx.actor, positionals, body);
      for (const r of results) out(`${r.outcome.padEnd(15)}${r.id}${'errors' in r ? `  ${r.errors.join('; ')}` : ''}`);
      return results.every((r) => r.outcome === 'queued' || r.outcome === 'already_queued') ? 0 : 1;
    }
    throw new UsageError('quarantine takes list or replay');
  });
}

/**
 * `target pause <name>`, `target resume <name>`, `target list`; for an ordered target, `target blocked
 * <name>` (its keys held back by a dead letter) and `target release <name> <key>`.
 */
export function targetCommand(ctx: OperatorContext, args: string[]): Promise<number> {
  const { config, out } = ctx;
  const [sub, name, key] = args;
  return withQueues(config, async (pipeline) => {
    const control = createTargetControl(pipeline);
    if (sub === 'list') {
      out(
        formatTable(
          ['TARGET', 'PAUSED'],
          (await control.states()).map((t) => [t.target, t.paused ? 'yes' : 'no']),
        ),
      );
      return 0;
    }
    if ((sub === 'pause' || sub === 'resume') && name) {
      await recoveryFor(ctx, pipeline).setTargetPaused(ctx.actor, name, sub === 'pause');
      out(`${name}: ${sub === 'pause' ? 'paused' : 'resumed'}`);
      return 0;
    }
    if (sub === 'blocked' && name) {
      const { ordered, blocked } = await createBlockedKeys(pipeline).list(name);
      if (!ordered) {
        out(`${name}: no order in its settings, so no key can be blocked`);
        return 0;
      }
      out(
        formatTable(
          ['KEY', 'EVENT ID', 'SINCE', 'WAITING'],
          blocked.map((b) => [b.key, b.eventId, b.since, b.waiting]),
        ),
      );
      out(`${blocked.length} blocked key(s)`);
      return 0;
    }
    if (sub === 'release' && name && key !== undefined) {
      try {
        const released = await recoveryFor(ctx, pipeline).releaseBlockedKey(ctx.actor, name, key);
        out(
          `released  ${name} key ${JSON.stringify(key)}: its later deliveries go on; the dead letter ` +
            `${name}/${released.eventId} stays`,
        );
        return 0;
      } catch (err) {
        const code = errorCode(err);
        if (code !== 'not_blocked' && code !== 'not_ordered') throw err;
        out(`not released  ${(err as Error).message}`);
        return 1;
      }
    }
    throw new UsageError('target takes list, pause <name>, resume <name>, blocked <name> or release <name> <key>');
  });
}
