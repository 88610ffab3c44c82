import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type {
  ArchivePhase,
  BenchResult,
  OffOnIngest,
  CpuFigures,
  DrainFigures,
  DrainIntoPhase,
  MaybeDrain,
  TableRow,
} from './results';

/** The targets, for a 2-core machine that also runs Redis and the load generator. */
export const TARGETS = {
  /** Against the Express baseline (the node:http one is reported beside it, without a target). */
  ingestRatio: 0.8,
  ackP99Ms: 20,
  e2eP99Ms: 50,
  drainRatio: 0.8,
  /** Ingest with tracing on (every span sampled and exported) against off, in the same run. */
  tracingIngestRatio: 0.8,
  /** Ingest with the evidence archive on against off, in the same run. */
  archiveIngestRatio: 0.95,
  /** Notifications of a backlog written to the archive per second. */
  archiveRowsPerSec: 5000,
  /** A target with a typical transform against the same target without one. */
  transformRatio: 0.6,
  rssUnderLoadMB: 200,
  /** Per-event drain cost at 10x the backlog over the cost at 1x: flat means within 10 %. */
  growthCost: 1.1,
  /**
   * Redis left for good per drained event once retention and TTLs have run: nothing, within the
   * slack of the measurement (stream sizes are estimates; key tables shrink in steps).
   */
  residualBytesPerEvent: 64,
  /** The console's search answer, request to the page's last byte. */
  consoleSearchMs: 200,
  /** Redis memory per event remembered for the de-duplication window. */
  rememberedBytesPerEvent: 250,
} as const;

const r2 = (v: number) => Math.round(v * 100) / 100;

function ratio(service: number | undefined, baseline: number | undefined): number | string {
  if (
    service === undefined ||
    baseline === undefined ||
    !Number.isFinite(service) ||
    !Number.isFinite(baseline) ||
    baseline === 0
  )
    return '—';
  return r2(service / baseline);
}

function cpuSplit(c: CpuFigures): string {
  return `${Math.round(c.subjectPct)} / ${Math.round(c.redisPct)} / ${Math.round(c.loadGeneratorPct)}`;
}

function drained(d: MaybeDrain): DrainFigures | undefined {
  return 'skipped' in d ? undefined : d;
}

function skippedText(d: MaybeDrain): string {
  return 'skipped' in d ? d.skipped : '';
}

type AddRow = (
  section: string,
  metric: string,
  service: number | string | undefined,
  baseline: number | string | undefined,
  target?: string,
  met?: boolean | null,
  withRatio?: boolean,
) => void;

export function buildRows(res: BenchResult): TableRow[] {
  const rows: TableRow[] = [];
  const row: AddRow = (section, metric, service, baseline, target = '', met = null, withRatio = true) =>
    rows.push({
      section,
      metric,
      service: service ?? '—',
      baseline: baseline ?? '—',
      ratio: withRatio && typeof service === 'number' && typeof baseline === 'number' ? ratio(service, baseline) : '—',
      target,
      met,
    });

  if (res.ingest) {
    const { service: s, baseline: b, expressBaseline: x, connections } = res.ingest;
    const sec = `ingest (closed loop, ${connections} conns)`;
    const vsExpress = `ingest vs the Express baseline (${connections} conns)`;
    const q = ratio(s.acceptedPerSec, x.acceptedPerSec);
    row(
      vsExpress,
      'accepted/s, no errors',
      s.acceptedPerSec,
      x.acceptedPerSec,
      `>= ${TARGETS.ingestRatio}x`,
      typeof q === 'number' && q >= TARGETS.ingestRatio && s.errors === 0,
    );
    row(vsExpress, 'errors', s.errors, x.errors, '0', s.errors === 0, false);
    row(vsExpress, 'CPU ms per accepted request', s.cpu.subjectMsPerRequest, x.cpu.subjectMsPerRequest);
    row(sec, 'accepted/s, no errors', s.acceptedPerSec, b.acceptedPerSec);
    row(sec, 'ack p50 ms', s.ack.p50, b.ack.p50);
    row(sec, 'ack p99 ms', s.ack.p99, b.ack.p99);
    row(sec, 'errors', s.errors, b.errors, '0', s.errors === 0, false);
    row(sec, 'CPU ms per accepted request', s.cpu.subjectMsPerRequest, b.cpu.subjectMsPerRequest);
    row(sec, 'Redis CPU ms per request', s.cpu.redisMsPerRequest, b.cpu.redisMsPerRequest);
    row(sec, 'CPU % of a core: subject / redis / load gen', cpuSplit(s.cpu), cpuSplit(b.cpu), '', null, false);
  }
  if (res.fixedRate) {
    const { service: s, baseline: b, rate } = res.fixedRate;
    const sec = `fixed ${rate}/s`;
    row(sec, 'achieved rate /s', s.achievedPerSec, b.achievedPerSec, '', null, false);
    row(sec, 'ack p50 ms', s.ack.p50, b.ack.p50);
    row(sec, 'ack p99 ms', s.ack.p99, b.ack.p99, `<= ${TARGETS.ackP99Ms} ms`, s.ack.p99 <= TARGETS.ackP99Ms);
    row(sec, 'e2e p50 ms', s.e2e?.p50 ?? s.e2eSkipped, b.e2e?.p50);
    row(
      sec,
      'e2e p99 ms',
      s.e2e?.p99 ?? s.e2eSkipped,
      b.e2e?.p99,
      `<= ${TARGETS.e2eP99Ms} ms`,
      s.e2e ? s.e2e.p99 <= TARGETS.e2eP99Ms : null,
    );
    row(
      sec,
      'errors (+ undelivered)',
      s.errors + (s.undelivered ?? 0),
      b.errors + (b.undelivered ?? 0),
      '0',
      s.errors + (s.undelivered ?? 0) === 0,
      false,
    );
    row(sec, 'CPU ms per event (receive + deliver)', s.cpu.subjectMsPerRequest, b.cpu.subjectMsPerRequest);
    row(sec, 'CPU % of a core: subject / redis / load gen', cpuSplit(s.cpu), cpuSplit(b.cpu), '', null, false);
    row(sec, 'load generator lag p99 ms', s.generatorLagMs.p99, b.generatorLagMs.p99, '', null, false);
  }
  const drainRows = (label: string, d: BenchResult['drain']) => {
    if (!d) return;
    const s = drained(d.service);
    const b = drained(d.baseline);
    const sec = `${label} ${d.backlog.toLocaleString('en-US')} queued`;
    const q = ratio(s?.eventsPerSec, b?.eventsPerSec);
    row(
      sec,
      'events/s delivered',
      s?.eventsPerSec ?? skippedText(d.service),
      b?.eventsPerSec ?? skippedText(d.baseline),
      `>= ${TARGETS.drainRatio}x`,
      s ? typeof q === 'number' && q >= TARGETS.drainRatio : null,
    );
    if (d.rounds)
      row(
        sec,
        'events/s delivered, every round (best counts)',
        d.rounds.service.map((r) => r.toLocaleString('en-US')).join(' / '),
        d.rounds.baseline.map((r) => r.toLocaleString('en-US')).join(' / '),
        '',
        null,
        false,
      );
    row(sec, 'CPU ms per delivery (drainer)', s?.cpuMsPerDelivery, b?.cpuMsPerDelivery);
    row(sec, 'Redis CPU ms per delivery', s?.redisCpuMsPerDelivery, b?.redisCpuMsPerDelivery);
    row(sec, 'Redis bytes per queued event', s?.redisBytesPerQueuedEvent, b?.redisBytesPerQueuedEvent);
    row(
      sec,
      'Redis after drain, MB above start',
      s ? r2(s.redisAfterDrainMB - s.redisStartMB) : undefined,
      b ? r2(b.redisAfterDrainMB - b.redisStartMB) : undefined,
      '',
      null,
      false,
    );
    row(
      sec,
      'Redis per remembered event (MEMORY USAGE, no streams), B',
      s?.rememberedBytesPerEvent,
      b?.rememberedBytesPerEvent,
      `<= ${TARGETS.rememberedBytesPerEvent}`,
      s ? s.rememberedBytesPerEvent <= TARGETS.rememberedBytesPerEvent : null,
    );
    row(
      sec,
      'Redis per event in replay keys (kept 2x the timestamp tolerance), B',
      s?.replayBytesPerEvent,
      b?.replayBytesPerEvent,
      '',
      null,
      false,
    );
    // B per event x 1,000,000 events = MB held for a week's window of a million events.
    row(
      sec,
      'Redis per million events a week, MB',
      s ? r2(s.rememberedBytesPerEvent) : undefined,
      b ? r2(b.rememberedBytesPerEvent) : undefined,
    );
    row(
      sec,
      'Redis per event after retention (keys with a TTL), B',
      s?.expiringBytesPerEvent,
      b?.expiringBytesPerEvent,
    );
    row(
      sec,
      'Redis per event once TTLs ran out, B',
      s?.residualBytesPerEvent,
      b?.residualBytesPerEvent,
      `<= ${TARGETS.residualBytesPerEvent} (back to start)`,
      s ? s.residualBytesPerEvent <= TARGETS.residualBytesPerEvent : null,
      false,
    );
    row(sec, 'RSS max MB', s?.rssMaxMB, b?.rssMaxMB);
    if (d.ordered) {
      const o = drained(d.ordered.drain);
      // The service's unordered drain is the first row of this section.
      row(
        sec,
        `events/s delivered, ordered target (${d.ordered.keys.toLocaleString('en-US')} keys)`,
        o?.eventsPerSec ?? skippedText(d.ordered.drain),
        b?.eventsPerSec,
        '',
        null,
        false,
      );
    }
    if (d.multiTarget) {
      const m = drained(d.multiTarget.drain);
      const n = d.multiTarget.targets;
      // Against the raw worker's one-target rate, for scale only: the raw worker has no fan-out.
      row(
        sec,
        `events/s delivered to each of ${n} targets (deliveries/s ÷ ${n})`,
        m?.eventsPerSec ?? skippedText(d.multiTarget.drain),
        b?.eventsPerSec,
        '',
        null,
        false,
      );
      row(sec, `deliveries/s, ${n} targets`, m?.deliveriesPerSec, b?.eventsPerSec, '', null, false);
      row(
        sec,
        `RSS max MB, ${n} targets`,
        m?.rssMaxMB,
        b?.rssMaxMB,
        `<= ${TARGETS.rssUnderLoadMB} MB`,
        m ? m.rssMaxMB <= TARGETS.rssUnderLoadMB : null,
      );
    }
  };
  drainRows('drain', res.drain);
  if (res.transform) {
    const t = res.transform;
    const p = drained(t.plain);
    const x = drained(t.transformed);
    const sec = `transform (service drain, ${t.backlog.toLocaleString('en-US')} events, one target)`;
    const q = ratio(x?.eventsPerSec, p?.eventsPerSec);
    // "service" is the target with a transform, "baseline" the same target without one.
    row(
      sec,
      'events/s delivered, with a transform vs without',
      x?.eventsPerSec ?? skippedText(t.transformed),
      p?.eventsPerSec ?? skippedText(t.plain),
      `>= ${TARGETS.transformRatio}x`,
      x ? typeof q === 'number' && q >= TARGETS.transformRatio : null,
    );
    row(sec, 'CPU ms per delivery (drainer)', x?.cpuMsPerDelivery, p?.cpuMsPerDelivery);
    row(sec, 'RSS max, MB (drainer)', x?.rssMaxMB, p?.rssMaxMB);
  }
  if (res.growth) {
    drainRows('growth', res.growth);
    const g = res.growth;
    row(
      `growth ${g.backlog.toLocaleString('en-US')} queued`,
      'cost per event vs 1x backlog',
      g.serviceCostGrowth ?? skippedText(g.service),
      g.baselineCostGrowth ?? undefined,
      `<= ${TARGETS.growthCost}`,
      g.serviceCostGrowth === null ? null : g.serviceCostGrowth <= TARGETS.growthCost,
    );
  }
  // The service's RSS at the peak of every phase (the receiver alone at ingest, ROLE=all at a fixed rate and
  // in the soak, the worker alone in the drains), each against the target.
  /** A drain into the merchant's side (RabbitMQ, PostgreSQL) against its raw baseline. */
  const drainIntoRows = (a: DrainIntoPhase, sec: string, what: string) => {
    const s = 'skipped' in a.service ? undefined : a.service;
    const b = 'skipped' in a.baseline ? undefined : a.baseline;
    const q = s && b ? ratio(s.eventsPerSec, b.eventsPerSec) : undefined;
    row(
      sec,
      what,
      s?.eventsPerSec ?? ('skipped' in a.service ? a.service.skipped : ''),
      b?.eventsPerSec ?? ('skipped' in a.baseline ? a.baseline.skipped : ''),
      `>= ${TARGETS.drainRatio}x`,
      s && b ? typeof q === 'number' && q >= TARGETS.drainRatio && s.delivered === a.backlog : null,
    );
    if (a.rounds)
      row(
        sec,
        `${what}, every round (best counts)`,
        a.rounds.service.join(' / '),
        a.rounds.baseline.join(' / '),
        '',
        null,
        false,
      );
    row(sec, 'CPU ms per delivery (drainer)', s?.cpuMsPerDelivery, b?.cpuMsPerDelivery);
    row(sec, 'RSS max MB', s?.rssMaxMB, b?.rssMaxMB, '', null, false);
  };
  if (res.amqp) {
    const sec = `drain to RabbitMQ, ${res.amqp.backlog.toLocaleString('en-US')} queued (vs raw amqplib with confirms)`;
    drainIntoRows(res.amqp, sec, 'events/s confirmed');
  }
  if (res.postgres) {
    const sec = `drain into PostgreSQL, ${res.postgres.backlog.toLocaleString('en-US')} queued (vs raw node-postgres inserts)`;
    drainIntoRows(res.postgres, sec, 'events/s inserted');
  }
  const peaks: [string, number | undefined, number | undefined][] = [
    ['ingest (ROLE=receiver)', res.ingest?.service.rssMaxMB, res.ingest?.baseline.rssMaxMB],
    [
      `fixed ${res.fixedRate?.rate ?? ''}/s (ROLE=all)`,
      res.fixedRate?.service.rssMaxMB,
      res.fixedRate?.baseline.rssMaxMB,
    ],
    [
      'drain (ROLE=worker)',
      res.drain ? drained(res.drain.service)?.rssMaxMB : undefined,
      res.drain ? drained(res.drain.baseline)?.rssMaxMB : undefined,
    ],
    ['drain, ordered target', res.drain?.ordered ? drained(res.drain.ordered.drain)?.rssMaxMB : undefined, undefined],
    [
      'drain, several targets',
      res.drain?.multiTarget ? drained(res.drain.multiTarget.drain)?.rssMaxMB : undefined,
      undefined,
    ],
    [
      'growth (ROLE=worker)',
      res.growth ? drained(res.growth.service)?.rssMaxMB : undefined,
      res.growth ? drained(res.growth.baseline)?.rssMaxMB : undefined,
    ],
    ['soak (ROLE=all)', res.soak?.service.rssMaxMB, res.soak?.baseline.rssMaxMB],
  ];
  for (const [phase, s, b] of peaks) {
    if (s !== undefined)
      row('memory', `RSS max MB, ${phase}`, s, b, `<= ${TARGETS.rssUnderLoadMB} MB`, s <= TARGETS.rssUnderLoadMB);
  }
  const measured = peaks.map(([, s]) => s).filter((v): v is number => v !== undefined);
  if (measured.length > 0) {
    const s = Math.max(...measured);
    const b = Math.max(...peaks.map(([, , v]) => v).filter((v): v is number => v !== undefined));
    row(
      'memory',
      'RSS max MB, every phase',
      s,
      Number.isFinite(b) ? b : undefined,
      `<= ${TARGETS.rssUnderLoadMB} MB`,
      s <= TARGETS.rssUnderLoadMB,
    );
    const after = res.fixedRate ?? res.ingest;
    if (after) row('memory', 'RSS after load MB', after.service.rssAfterMB, after.baseline.rssAfterMB);
  }
  if (res.soak) {
    const { service: s, baseline: b } = res.soak;
    const sec = `soak ${s.rate}/s, ${s.seconds} s (baseline ${b.seconds} s)`;
    row(
      sec,
      'RSS floor, 2nd fifth -> last fifth MB',
      `${s.rssFloorFirstMB} -> ${s.rssFloorLastMB}`,
      `${b.rssFloorFirstMB} -> ${b.rssFloorLastMB}`,
      'flat',
      s.flat,
      false,
    );
    row(sec, 'RSS floor slope MB/min', s.rssSlopeMBPerMin, b.rssSlopeMBPerMin, '', null, false);
    row(
      sec,
      'RSS max MB',
      s.rssMaxMB,
      b.rssMaxMB,
      `<= ${TARGETS.rssUnderLoadMB} MB`,
      s.rssMaxMB <= TARGETS.rssUnderLoadMB,
    );
    row(sec, 'ack p99 ms', s.ack.p99, b.ack.p99, `<= ${TARGETS.ackP99Ms} ms`, s.ack.p99 <= TARGETS.ackP99Ms);
    row(
      sec,
      'e2e p99 ms',
      s.e2e?.p99 ?? s.e2eSkipped,
      b.e2e?.p99,
      `<= ${TARGETS.e2eP99Ms} ms`,
      s.e2e ? s.e2e.p99 <= TARGETS.e2eP99Ms : null,
    );
    row(sec, 'errors', s.errors, b.errors, '0', s.errors === 0, false);
  }
  if (res.tracing) {
    // The service against itself: tracing on (every span sampled, exported to a local collector) in the service column, off in the baseline one.
    const { ingest, drain } = res.tracing;
    const sec = 'tracing on (100 % sampled) vs off, same run';
    offOnIngestRows(row, sec, ingest, TARGETS.tracingIngestRatio);
    const on = 'skipped' in drain.on ? drain.on.skipped : drain.on.eventsPerSec;
    const off = 'skipped' in drain.off ? drain.off.skipped : drain.off.eventsPerSec;
    row(sec, 'drain events/s', on, off);
    row(
      sec,
      'drain CPU ms per delivery',
      'skipped' in drain.on ? undefined : drain.on.cpuMsPerDelivery,
      'skipped' in drain.off ? undefined : drain.off.cpuMsPerDelivery,
    );
  }
  if (res.archive) archiveRows(res.archive, row);
  if (res.console) {
    const c = res.console;
    const sec = `console search, ${c.events.toLocaleString('en-US')} events retained (${c.samples} requests each)`;
    const searches: [string, typeof c.byRequestId][] = [
      ['request_id search', c.byRequestId],
      ['list, first page', c.firstPage],
      ['filtered list (type, target, dead letters)', c.filtered],
      ['filter matching nothing (whole scan budget)', c.noMatch],
      ['20 pages back, each page', c.pagedBack],
    ];
    for (const [what, l] of searches) {
      row(
        sec,
        `${what}: p50 / p99 ms`,
        `${l.p50} / ${l.p99}`,
        '—',
        `p99 <= ${TARGETS.consoleSearchMs} ms`,
        l.p99 <= TARGETS.consoleSearchMs,
        false,
      );
    }
  }
  return rows;
}

/** The service against itself, a feature on (service column) against off (baseline column): its ingest rows. */
function offOnIngestRows(row: AddRow, sec: string, ingest: OffOnIngest, target: number): void {
  const { on, off } = ingest;
  const q = ratio(on.acceptedPerSec, off.acceptedPerSec);
  row(
    sec,
    'ingest accepted/s, no errors',
    on.acceptedPerSec,
    off.acceptedPerSec,
    `>= ${target}x`,
    typeof q === 'number' && q >= target && on.errors === 0,
  );
  row(sec, 'ingest ack p99 ms', on.ack.p99, off.ack.p99);
  row(sec, 'ingest CPU ms per accepted request', on.cpu.subjectMsPerRequest, off.cpu.subjectMsPerRequest);
}

/** The service against itself: the archive on in the service column, off in the baseline one. */
function archiveRows(a: ArchivePhase, row: AddRow): void {
  const sec = `evidence archive on vs off, same run; ${a.backlog.toLocaleString('en-US')} backlog`;
  if ('skipped' in a) {
    row(sec, 'skipped', a.skipped, '—', '', null, false);
    return;
  }
  offOnIngestRows(row, sec, a.ingest, TARGETS.archiveIngestRatio);
  const { rounds } = a.ingest;
  row(
    sec,
    'ingest accepted/s, every round (best counts)',
    rounds.on.join(' / '),
    rounds.off.join(' / '),
    '',
    null,
    false,
  );
  const d = 'skipped' in a.drain ? undefined : a.drain;
  row(
    sec,
    'backlog archived rows/s (ROLE=worker)',
    d?.rowsPerSec ?? ('skipped' in a.drain ? a.drain.skipped : ''),
    '—',
    `>= ${TARGETS.archiveRowsPerSec.toLocaleString('en-US')}/s`,
    d ? d.rowsPerSec >= TARGETS.archiveRowsPerSec && d.rows === a.backlog : null,
    false,
  );
  row(sec, 'backlog archived rows/s, every round (best counts)', a.drainRounds.join(' / '), '—', '', null, false);
  row(sec, 'archiver CPU ms per row', d?.cpuMsPerRow ?? '', '—', '', null, false);
}

const cell = (v: number | string) =>
  typeof v === 'number' ? (Number.isInteger(v) ? v.toLocaleString('en-US') : String(v)) : v;

/** A Markdown table, so what the harness prints can be pasted into docs/benchmarks.md as is. */
export function renderTable(rows: readonly TableRow[]): string {
  const header = ['section', 'metric', 'service', 'baseline', 'service ÷ baseline', 'target', 'met'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const r of rows) {
    const ratioText = typeof r.ratio === 'number' ? `${r.ratio}x` : r.ratio;
    const met = r.met === null ? '' : r.met ? 'yes' : '**no**';
    lines.push(
      `| ${r.section} | ${r.metric} | ${cell(r.service)} | ${cell(r.baseline)} | ${ratioText} | ${r.target} | ${met} |`,
    );
  }
  return lines.join('\n');
}

export function renderProfile(res: BenchResult): string {
  if (!res.profile) return '';
  const lines = [
    `CPU profile of the service under ingest load (${res.profile.totalMs} ms on CPU, idle excluded): top self time`,
    '',
    '| self % | self ms | function | where |',
    '|---|---|---|---|',
    ...res.profile.top.map((e) => `| ${e.selfPct} | ${e.selfMs} | ${e.function} | ${e.location} |`),
    '',
    'Self time by package: ' + res.profile.byPackage.map((p) => `${p.name} ${p.selfPct}%`).join(', '),
  ];
  return lines.join('\n');
}

/** Writes the run as JSON (bench/results/, gitignored): a timestamped file and latest.json. */
export function writeResults(dir: string, res: BenchResult): string {
  mkdirSync(dir, { recursive: true });
  const stamp = res.meta.startedAt.replace(/[:.]/g, '-');
  const file = path.join(dir, `bench-${res.meta.smoke ? 'smoke-' : ''}${stamp}.json`);
  const text = JSON.stringify(res, null, 2);
  writeFileSync(file, text);
  writeFileSync(path.join(dir, res.meta.smoke ? 'latest-smoke.json' : 'latest.json'), text);
  writeFileSync(
    path.join(dir, res.meta.smoke ? 'latest-smoke.md' : 'latest.md'),
    `${renderTable(res.rows)}\n\n${renderProfile(res)}\n`,
  );
  return file;
}
