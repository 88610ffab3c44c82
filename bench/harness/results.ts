import type { MaybeDrainInto } from './drainer';
import type { LatencySummary } from './stats';

/** CPU use during the measured run, in % of one core, and CPU ms per accepted request. */
export interface CpuFigures {
  subjectPct: number;
  redisPct: number;
  loadGeneratorPct: number;
  subjectMsPerRequest: number;
  redisMsPerRequest: number;
}

export interface IngestFigures {
  requests: number;
  acceptedPerSec: number;
  /** Non-2xx answers, connection errors and timeouts, and 2xx answers with no job in Redis. */
  errors: number;
  ack: LatencySummary;
  durationSec: number;
  cpu: CpuFigures;
  rssMaxMB: number;
  rssAfterMB: number;
}

export interface IngestPhase {
  connections: number;
  service: IngestFigures;
  /** The lean node:http baseline. */
  baseline: IngestFigures;
  /** The same handler inside one `app.use` on Express 5: what the service's own features are measured against. */
  expressBaseline: IngestFigures;
  rounds: { service: IngestFigures[]; baseline: IngestFigures[]; express: IngestFigures[] };
}

export interface FixedRateFigures {
  sent: number;
  errors: number;
  achievedPerSec: number;
  ack: LatencySummary;
  /** Receipt (the request leaving the load generator) to the sink having the event. */
  e2e?: LatencySummary;
  /** Accepted events the sink never got within the bound. */
  undelivered?: number;
  e2eSkipped?: string;
  generatorLagMs: { p99: number; max: number };
  cpu: CpuFigures;
  rssMaxMB: number;
  rssAfterMB: number;
}

export interface FixedRatePhase {
  rate: number;
  seconds: number;
  service: FixedRateFigures;
  baseline: FixedRateFigures;
}

export interface DrainFigures {
  backlog: number;
  /** Targets every event was fanned out to. */
  targets: number;
  /** Deliveries the sink had (events x targets when complete). */
  delivered: number;
  /** First to last delivery at the sink: the steady drain rate, without process start-up; deliveries/s ÷ targets. */
  eventsPerSec: number;
  deliveriesPerSec: number;
  /** Process start to last delivery. */
  totalSec: number;
  /** CPU time (user + system) of the drainer, and of Redis, from its start to the last delivery, per delivery. */
  cpuMsPerDelivery: number;
  redisCpuMsPerDelivery: number;
  enqueueSec: number;
  redisStartMB: number;
  redisBytesPerQueuedEvent: number;
  /** After the drain, with the retention settings still keeping completed jobs (1 h or 10,000 per queue). */
  redisAfterDrainMB: number;
  /** After removing what retention removes (completed jobs); keys with a TTL still there. */
  redisAfterRetentionMB: number;
  /** Keys with a TTL left after retention (de-duplication keys, request-id index) and their cost per event. */
  expiringKeys: number;
  expiringBytesPerEvent: number;
  /** After the keys with a TTL are gone too: what Redis keeps for good. */
  redisAfterExpiryMB: number;
  eventStreamMB: number;
  /** Keys without a TTL left after retention beyond fixed per-queue structures: a leak if it grows with the backlog. */
  persistentKeys: number;
  /**
   * Memory left for good per drained event, once retention and TTLs have run, minus the capped event
   * streams: about 0 when Redis is back to its starting level.
   */
  residualBytesPerEvent: number;
  /**
   * Redis memory per remembered event: `MEMORY USAGE` of every key under the prefix except BullMQ's
   * event streams, after the drain and retention (completed jobs removed), with the de-duplication
   * window still open, divided by the events.
   */
  rememberedBytesPerEvent: number;
  /** The replay keys (accepted nonces), kept for twice the timestamp tolerance only, per event. */
  replayBytesPerEvent: number;
  failedJobs: number;
  rssMaxMB: number;
  rssAfterMB: number;
}

export type MaybeDrain = DrainFigures | { skipped: string };

export interface DrainPhase {
  backlog: number;
  /** The best round of each (the highest rate). */
  service: MaybeDrain;
  baseline: MaybeDrain;
  /** Events/s of every round, in the order run (absent or one each: a single round). */
  rounds?: { service: number[]; baseline: number[] };
  /** The same backlog drained by the service to a target with `order`, the events spread over `keys` keys. */
  ordered?: { keys: number; drain: MaybeDrain };
  /** The same backlog drained by the service to `targets` targets, each event fanned out to all. */
  multiTarget?: { targets: number; drain: MaybeDrain };
}

export interface SoakFigures {
  seconds: number;
  rate: number;
  errors: number;
  ack: LatencySummary;
  e2e?: LatencySummary;
  e2eSkipped?: string;
  /** RSS floor (10th percentile: live memory after collections) in the second and the last fifth of the run. */
  rssFloorFirstMB: number;
  rssFloorLastMB: number;
  rssMaxMB: number;
  /** Slope of the RSS floor over the run after warm-up. */
  rssSlopeMBPerMin: number;
  flat: boolean;
  /** ack p99 per window, to see latency drift. */
  ackP99ByWindow: { fromSec: number; p99: number }[];
  rssSeries: { t: number; mb: number }[];
}

export interface SoakPhase {
  service: SoakFigures;
  baseline: SoakFigures;
}

export interface ProfileEntry {
  selfMs: number;
  selfPct: number;
  function: string;
  location: string;
}

export interface TableRow {
  section: string;
  metric: string;
  service: number | string;
  baseline: number | string;
  /** service ÷ baseline; for latencies and memory lower is better. */
  ratio: number | string;
  target: string;
  met: boolean | null;
}

/** The service with tracing off and on in the same run (best round of each). */
export interface TracingPhase {
  ingest: OffOnIngest;
  drain: { off: MaybeDrain; on: MaybeDrain };
  /** OTLP export requests the local collector received, and their size. */
  exports: number;
  exportedMB: number;
}

/** One drain of the archive stream's backlog into PostgreSQL by the service's archiver. */
export interface ArchiveDrain {
  rows: number;
  /** From the first batch's transaction start to the poll that first counted every row (PostgreSQL's clock). */
  seconds: number;
  rowsPerSec: number;
  /** CPU of the whole ROLE=worker process per row written. */
  cpuMsPerRow: number;
  rssMaxMB: number;
}

export type MaybeArchiveDrain = ArchiveDrain | { skipped: string };

/** Ingest with the archive off and on: the best round of each, and every round's rate. */
export interface OffOnIngest {
  off: IngestFigures;
  on: IngestFigures;
  rounds: { off: number[]; on: number[] };
}

/** The evidence archive: ingest with it on against off (best round of each), and a backlog drained. */
export type ArchivePhase =
  | {
      backlog: number;
      ingest: OffOnIngest;
      /** The best drain (the highest rate). */
      drain: MaybeArchiveDrain;
      /** Rows/s of every drain, in the order run (-1: skipped). */
      drainRounds: number[];
    }
  | { backlog: number; skipped: string };

/** The service's drain to one target with a typical transform beside the same target without one. */
export interface TransformPhase {
  backlog: number;
  /** The best round of each (the highest rate). */
  plain: MaybeDrain;
  transformed: MaybeDrain;
  /** Events/s of every round, in the order run. */
  rounds?: { plain: number[]; transformed: number[] };
}

export interface BenchResult {
  meta: {
    startedAt: string;
    finishedAt: string;
    durationSec: number;
    command: string;
    smoke: boolean;
    forwardingAvailable: boolean;
    machine: { nproc: number; cpuModel: string; memTotalGB: number; os: string; node: string; redis: string };
    options: unknown;
  };
  ingest?: IngestPhase;
  fixedRate?: FixedRatePhase;
  drain?: DrainPhase;
  growth?: DrainPhase & { serviceCostGrowth: number | null; baselineCostGrowth: number | null };
  soak?: SoakPhase;
  amqp?: AmqpPhase;
  postgres?: PostgresPhase;
  tracing?: TracingPhase;
  archive?: ArchivePhase;
  console?: ConsolePhase;
  transform?: TransformPhase;
  profile?: { file: string; totalMs: number; top: ProfileEntry[]; byPackage: { name: string; selfPct: number }[] };
  rows: TableRow[];
}

/** One drain of the backlog into RabbitMQ, timed at a consumer of the bound queue. */
export type MaybeAmqpDrain = MaybeDrainInto;

/** A drain into the merchant's side by the service and by its raw baseline; the best round of each. */
export interface DrainIntoPhase {
  backlog: number;
  service: MaybeDrainInto;
  baseline: MaybeDrainInto;
  rounds?: { service: number[]; baseline: number[] };
}

export type AmqpPhase = DrainIntoPhase;

/** The drain into a PostgreSQL table, timed by the rows' `received_at`. */
export type PostgresPhase = DrainIntoPhase;

/** The console's search latency (ms, request to the page's last byte) over `events` retained events. */
export interface ConsolePhase {
  events: number;
  /** Each target's completed and failed deliveries once filled. */
  deliveries: Record<string, Record<string, number>>;
  samples: number;
  byRequestId: LatencySummary;
  firstPage: LatencySummary;
  filtered: LatencySummary;
  /** A filter that matches nothing: the page reads its whole scan budget. */
  noMatch: LatencySummary;
  /** Each of 20 pages back through a filtered list, from the previous page's cursor. */
  pagedBack: LatencySummary;
}
