import type { OutgoingRequest } from '../build-request';
import type { DeliveryJob } from '../../model/jobs';

/**
 * The inbox row, one per event: its columns in insert order, as `createTable` makes them. `received_at`
 * is when the row was written (the database's clock); `timestamp` is the envelope's, when the platform's
 * notification was received; `body` the JSON sent as jsonb, `body_text` the same text byte for byte.
 */
export const INBOX_COLUMNS = [
  ['webhook_id', 'text PRIMARY KEY'],
  ['type', 'text NOT NULL'],
  ['environment', 'text'],
  ['timestamp', 'timestamptz NOT NULL'],
  ['received_at', 'timestamptz NOT NULL DEFAULT clock_timestamp()'],
  ['body', 'jsonb NOT NULL'],
  ['body_text', 'text NOT NULL'],
  ['trace_id', 'text'],
] as const;

/** `ledger.inbox` → `"ledger"."inbox"`: the schema checked the name (lower-case letters, digits, _). */
export function quoteTable(table: string): string {
  return table
    .split('.')
    .map((part) => `"${part}"`)
    .join('.');
}

/** The `CREATE TABLE IF NOT EXISTS` that `createTable: true` runs, and docs/forwarding.md shows. */
export function inboxDefinition(table: string): string {
  const columns = INBOX_COLUMNS.map(([name, type]) => `  "${name}" ${type}`).join(',\n');
  return `CREATE TABLE IF NOT EXISTS ${quoteTable(table)} (\n${columns}\n)`;
}

/**
 * One delivery: the key makes a second insert of the same event (a retry after a lost answer, a
 * resend, a replay) write nothing, and `rowCount` says which happened. The body is one parameter,
 * typed text twice: as jsonb and as the exact text.
 */
export function insertStatement(table: string): string {
  return (
    `INSERT INTO ${quoteTable(table)} ("webhook_id", "type", "environment", "timestamp", "received_at", "body", ` +
    `"body_text", "trace_id") VALUES ($1, $2, $3, $4, clock_timestamp(), $5::text::jsonb, $5::text, $6) ` +
    'ON CONFLICT ("webhook_id") DO NOTHING'
  );
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The trace id of a W3C `traceparent` (`00-<trace id>-<span id>-01`), when the message carries one. */
function traceIdOf(headers: Record<string, string>): string | null {
  return /^[0-9a-f]{2}-([0-9a-f]{32})-/.exec(headers.traceparent ?? '')?.[1] ?? null;
}

/** The statement's parameters for one message; throws TypeError for a body that is not UTF-8 text. */
export function rowValues(message: OutgoingRequest, job: DeliveryJob): (string | null)[] {
  const body = typeof message.body === 'string' ? message.body : utf8.decode(message.body);
  return [job.eventId, job.eventType, job.environment ?? null, job.receivedAt, body, traceIdOf(message.headers)];
}
