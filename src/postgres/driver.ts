import type * as Pg from 'pg';

/**
 * node-postgres, loaded on first use: a process with neither an archive nor a postgres destination
 * (every receiver, most workers) does not carry its modules.
 */
export function pg(): typeof Pg {
  return require('pg') as typeof Pg;
}
