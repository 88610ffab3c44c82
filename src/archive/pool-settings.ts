import type { PgPoolOptions } from '../postgres/pool';

/**
 * The archive's pool: a few connections (the archiver's batches, the operator's reads), a connection
 * attempt that gives up within seconds so an unreachable PostgreSQL shows as down instead of hanging,
 * and no limit on a statement (a migration or a verification of years of rows takes its time).
 */
export const ARCHIVE_POOL = { size: 4, timeoutMs: 3000, statementTimeoutMs: 0 } satisfies PgPoolOptions;
