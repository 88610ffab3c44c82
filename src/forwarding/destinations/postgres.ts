import type { DeliveryTransport } from '../delivery-transport';
import { classifyNetworkError } from '../failure';
import { brokerFailure, connectionNotices } from './broker';
import { insertStatement, rowValues } from './postgres-row';
import type { Logger } from '../../logging/logger';
import type { PostgresDestination } from '../../model/destination-schema';
import type { ErrorClass } from '../../model/jobs';
import type { Target } from '../../model/target-schema';
import { pgFailure, type PgFailure } from '../../postgres/failure';
import { createPgPool } from '../../postgres/pool';
import { withTimeout } from '../../model/with-timeout';

/** The failure's class: the server's refusal, the client giving up waiting, or the connection's. */
function errorClassOf(f: PgFailure): ErrorClass {
  if (f.sqlstate !== undefined) return 'database';
  if (f.code === 'ETIMEDOUT' || /timeout/i.test(f.message)) return 'timeout';
  return classifyNetworkError(f.code);
}

/** A failure that means the connection is gone: none was made, it broke, or the server is shutting down. */
function connectionLost(f: PgFailure): boolean {
  return f.sqlstate === undefined || /^(08|57P)/.test(f.sqlstate);
}

/**
 * A PostgreSQL table through one pool per target and worker process (of the target's concurrency,
 * capped). A delivery is one `INSERT … ON CONFLICT (webhook_id) DO NOTHING`, committed (autocommit)
 * within the target's `timeoutMs`: a row inserted, or one already there, is delivered. A failure is
 * retried or dead-lettered by its SQLSTATE (postgres/failure.ts), the server's message kept.
 */
export function createPostgresTransport(target: Target, d: PostgresDestination, logger?: Logger): DeliveryTransport {
  const notices = connectionNotices(logger, target.name, 'PostgreSQL');
  const pg = createPgPool(d.url, {
    size: target.concurrency,
    timeoutMs: target.timeoutMs,
    onIdleError: (err) => notices.lost(pgFailure(err).message),
  });
  const text = insertStatement(d.table);
  const noAnswer = () =>
    Object.assign(new Error(`no answer from PostgreSQL within ${target.timeoutMs} ms (timeoutMs)`), {
      code: 'ETIMEDOUT',
    });
  let closed = false;
  return {
    async send(message, job) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      let values: (string | null)[];
      try {
        values = rowValues(message, job);
      } catch {
        throw brokerFailure('database', 'the body is not UTF-8 text: a jsonb column cannot hold it', elapsed(), true);
      }
      if (closed) throw brokerFailure('network', 'the destination is closed (worker stopping)', elapsed());
      try {
        // Connecting and the insert share the target's timeoutMs (the pool's own timeouts bound each alone).
        const inserted = pg.pool.query(text, values);
        const res = await withTimeout(inserted, target.timeoutMs, noAnswer);
        notices.restored();
        const confirmed =
          res.rowCount === 1
            ? `inserted into ${d.table}`
            : `already in ${d.table} (webhook_id exists): nothing written`;
        return { latencyMs: elapsed(), confirmed };
      } catch (err) {
        const f = pgFailure(err);
        if (connectionLost(f)) notices.lost(f.message);
        const what =
          f.sqlstate === undefined
            ? `cannot reach PostgreSQL for "${d.table}"`
            : `PostgreSQL refused the insert into "${d.table}"`;
        throw brokerFailure(errorClassOf(f), `${what}: ${f.message}`, elapsed(), !f.transient);
      }
    },
    async close(ms) {
      closed = true;
      await pg.close(ms);
    },
  };
}
