/**
 * The PostgreSQL delivery baseline: one plain BullMQ worker per event queue that inserts each job
 * into the inbox table with node-postgres (one pool, the same INSERT … ON CONFLICT and the same body
 * the service writes), and nothing else: no signing, no logging, no metrics, no retry policy of its
 * own. Run as its own process for the postgres phase (bench/phases/postgres.ts).
 */
import type { Job } from 'bullmq';
import { Pool } from 'pg';
import type { EventJob } from '../../src/model/jobs';
import { required, runRawEventWorkers, standardBody } from './raw-event-workers';

const INSERT =
  'INSERT INTO inbox (webhook_id, type, environment, "timestamp", received_at, body, body_text, trace_id) ' +
  'VALUES ($1, $2, $3, $4, clock_timestamp(), $5::text::jsonb, $5::text, NULL) ON CONFLICT (webhook_id) DO NOTHING';

try {
  const pool = new Pool({ connectionString: required('PG_URL'), max: Number(required('PG_POOL_SIZE')) });
  const deliver = async (job: Job<EventJob>): Promise<void> => {
    const { eventId, eventType, environment, receivedAt } = job.data;
    await pool.query(INSERT, [eventId, eventType, environment ?? null, receivedAt, standardBody(job.data, true)]);
  };
  runRawEventWorkers('raw pg worker', deliver, () => pool.end());
} catch (err) {
  process.stderr.write(`raw pg worker failed: ${(err as Error).message}\n`);
  process.exit(1);
}
