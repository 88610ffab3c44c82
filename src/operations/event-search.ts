import { attemptsAcrossSeries } from '../forwarding/delivery-story';
import { isEventId } from '../model/ids';
import { eventFactsOf, type EventFacts } from '../model/event-facts';
import type { DeliveryJob } from '../model/jobs';
import type { DeliveryQueue } from '../model/queues';
import type { EventLookup } from '../pipeline/lookup';
import type { QueueRegistry } from '../pipeline/queue-registry';
import { deliveryStateOf, type DeliveryState } from './delivery-state';
import { UnknownTargetError } from './dead-letters';
import type { ArchiveHistory, ArchivedEvent } from '../archive/history';
import { eventIdsForRequest } from './event-lookup';

/** The archive's words for how a delivery ended, as the console's states. */
const ARCHIVED_STATES: Record<string, SearchRow['state']> = {
  delivered: 'delivered',
  dead_lettered: 'dead_letter',
  dropped: 'dropped',
  filtered: 'filtered',
  discarded: 'discarded',
};

/** An archived event's rows: each target's final state, or the event alone when no delivery ended. */
function archivedRows(event: ArchivedEvent | undefined): SearchRow[] {
  const first = event?.rows[0];
  if (!event || !first) return [];
  const base = {
    eventId: first.eventId,
    eventType: first.eventType,
    environment: first.environment,
    receivedAt: first.receivedAt.toISOString(),
    facts: factsOfText(first.body),
    source: 'archive' as const,
  };
  if (event.deliveries.length === 0)
    return [
      { ...base, target: '', state: first.reason ? 'quarantined' : 'unrouted', attempts: 0, at: base.receivedAt },
    ];
  return event.deliveries.map((d) => ({
    ...base,
    target: d.target,
    state: ARCHIVED_STATES[d.state] ?? 'discarded',
    attempts: d.attempts,
    at: d.endedAt,
  }));
}

/**
 * Finding events for the console: by a `request_id`, an event id or a `webhook-id` (the event id
 * again) through the request-id index and the jobs, or a list of deliveries, newest first, read from
 * each target's delivery queue and filtered by type, environment, target, state and time.
 *
 * The list reads no index of its own (nothing is added to the notify path): delivered and
 * dead-lettered deliveries come from their queues' sorted sets (by when they finished), read a chunk
 * at a time and merged newest first; deliveries still under way (queued, in flight, retrying, waiting
 * for their turn, paused) from the queues' live lists, at most LIVE_CAP per target. One page reads at
 * most SCAN_BUDGET deliveries, so a filter that matches little answers in bounded time and says how
 * far back it looked; the next page goes on from there.
 */

export interface SearchQuery {
  /** A `request_id`, an event id or a `webhook-id`. */
  q?: string;
  eventType?: string;
  environment?: string;
  target?: string;
  state?: DeliveryState;
  /** Received at or after (ms since 1970). */
  from?: number;
  /** Received at or before. */
  to?: number;
  /** Where the previous page stopped (`next` of that page). */
  cursor?: string;
  /** @defaultValue 50 */
  limit?: number;
}

/** One delivery of one event (a target its filter left out is a row too, in state `filtered`). */
export interface SearchRow {
  eventId: string;
  eventType: string;
  environment?: string;
  receivedAt: string;
  /** Empty for an event with no delivery: unrouted (no target took it) or quarantined. */
  target: string;
  state: DeliveryState | 'unrouted' | 'quarantined' | 'discarded';
  /** Every attempt of every series (a replay or resend adds a series). */
  attempts: number;
  /** The platform's request id, amount and currency, from the body. */
  facts: EventFacts;
  /** The delivery's last change: delivered or dead-lettered, else started or queued. */
  at: string;
  /** Set on a row the archive told (Redis no longer holds the event). */
  source?: 'archive';
}

export interface SearchPage {
  /** Set when some rows came from the archive. */
  source?: 'archive';
  /** How the text was read: a request id, an event id, or no text (the list). */
  by: 'request_id' | 'event_id' | 'list';
  rows: SearchRow[];
  /** Deliveries read for this page. */
  scanned: number;
  /** The cursor of the next (older) page; absent when nothing older is left. */
  next?: string;
  /** The page stopped at the scan budget before it was full: `next` goes on from `reachedBack`. */
  budgetSpent?: boolean;
  reachedBack?: string;
}

export const SCAN_BUDGET = 2000;
const LIVE_CAP = 1000;
const CHUNK = 250;

type Pipeline = Pick<QueueRegistry, 'redis' | 'deliveryQueue' | 'deliveryQueues'> &
  Pick<EventLookup, 'findEvent' | 'deliveriesOf' | 'eventIdsForRequest'>;

/** What the list needs of a delivery job, read with one HMGET (not the whole job). */
interface Delivery {
  data: DeliveryJob;
  attemptsMade: number;
  timestamp: number;
  processedOn?: number;
  /** The job's log: the attempts of earlier series (see delivery-story.ts). */
  logs: string[];
  /** What a completed delivery returned (a transform's drop says so). */
  returnvalue?: unknown;
}

/** A delivery the list may show: where it came from and the time it sorts by; `delivery` once read. */
interface Candidate {
  target: string;
  queue: DeliveryQueue;
  id: string;
  bullState: string;
  time: number;
  delivery?: Delivery;
}

interface Cursor {
  /** Newest time still to show (inclusive). */
  t: number;
  /** `<target>/<event id>` already shown at exactly `t`. */
  s: string[];
}

function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

function decodeCursor(text: string | undefined): Cursor | undefined {
  if (!text) return undefined;
  try {
    const c = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Cursor;
    return typeof c.t === 'number' && Array.isArray(c.s)
      ? { t: c.t, s: c.s.filter((s): s is string => typeof s === 'string') }
      : undefined;
  } catch {
    return undefined;
  }
}

const iso = (ms: number | undefined) => new Date(ms ?? 0).toISOString();

function rowOf(
  target: string,
  job: Pick<Delivery, 'data'>,
  state: DeliveryState,
  time: number,
  attempts: number,
): SearchRow {
  return {
    eventId: job.data.eventId,
    eventType: job.data.eventType,
    environment: job.data.environment,
    receivedAt: job.data.receivedAt,
    target,
    state,
    attempts,
    facts: factsOfBody(job.data),
    at: iso(time),
  };
}

/** The facts of a stored body; none when it cannot be read as JSON. */
function factsOfBody(data: Pick<DeliveryJob, 'rawBody' | 'rawBodyEncoding'>): EventFacts {
  return data.rawBodyEncoding === 'utf8' ? factsOfText(data.rawBody) : {};
}

function factsOfText(body: string | Buffer): EventFacts {
  try {
    return eventFactsOf(JSON.parse(body.toString()));
  } catch {
    return {};
  }
}

/**
 * The delivery row and the rows of the targets its filter left out (one per target, recorded on every delivery job of
 * the event).
 */
function rowsOf(target: string, job: Delivery, bullState: string, state: DeliveryState, time: number): SearchRow[] {
  const finishedOn = bullState === 'completed' ? time : undefined;
  const attempts = attemptsAcrossSeries({ ...job, returnvalue: job.returnvalue, finishedOn }, bullState, job.logs);
  const own = rowOf(target, job, state, time, attempts);
  return [
    own,
    ...(job.data.filtered ?? []).map((t) => ({ ...own, target: t, state: 'filtered' as const, attempts: 0 })),
  ];
}

function matches(row: SearchRow, q: SearchQuery): boolean {
  if (q.eventType && row.eventType !== q.eventType) return false;
  if (q.environment && row.environment !== q.environment) return false;
  if (q.target && row.target !== q.target) return false;
  if (q.state && row.state !== q.state) return false;
  const received = Date.parse(row.receivedAt);
  if (q.from !== undefined && received < q.from) return false;
  if (q.to !== undefined && received > q.to) return false;
  return true;
}

/**
 * Reads the deliveries of the candidates in one pipeline; a job gone or not a delivery job is left unread (and
 * skipped).
 */
async function readDeliveries(redis: Pipeline['redis'], candidates: readonly Candidate[]): Promise<void> {
  if (candidates.length === 0) return;
  const batch = redis.pipeline();
  for (const c of candidates) {
    batch.hmget(c.queue.toKey(c.id), 'data', 'timestamp', 'processedOn', 'atm', 'returnvalue');
    batch.lrange(`${c.queue.toKey(c.id)}:logs`, 0, -1);
  }
  const answers = (await batch.exec()) ?? [];
  candidates.forEach((c, i) => {
    const [err, fields] = answers[2 * i] ?? [];
    const [logsErr, logs] = answers[2 * i + 1] ?? [];
    const [data, timestamp, processedOn, atm, returnvalue] = (err ? [] : (fields as (string | null)[])) ?? [];
    if (!data) return;
    try {
      const parsed = JSON.parse(data) as DeliveryJob;
      if (typeof parsed?.eventId !== 'string') return;
      c.delivery = {
        data: parsed,
        attemptsMade: Number(atm ?? 0),
        timestamp: Number(timestamp ?? 0),
        logs: logsErr ? [] : ((logs as string[] | null) ?? []),
        ...(processedOn ? { processedOn: Number(processedOn) } : {}),
        ...(returnvalue ? { returnvalue: JSON.parse(returnvalue) as unknown } : {}),
      };
    } catch {
      // not a delivery job: skipped
    }
  });
}

/** A stream of candidates, newest first: ids and times read a chunk at a time, the jobs read only when picked. */
interface Stream {
  buffer: Candidate[];
  done: boolean;
  fill(): Promise<void>;
}

/**
 * A sorted set of a delivery queue (completed or failed, scored by when the job finished), newest first, from `max`
 * down to `min`.
 */
function sortedSetStream(
  redis: Pipeline['redis'],
  queue: DeliveryQueue,
  target: string,
  key: string,
  bullState: string,
  max: number,
  min: number,
): Stream {
  let offset = 0;
  const stream: Stream = {
    buffer: [],
    done: false,
    async fill() {
      const flat = await redis.zrevrangebyscore(
        key,
        max === Infinity ? '+inf' : max,
        min === -Infinity ? '-inf' : min,
        'WITHSCORES',
        'LIMIT',
        offset,
        CHUNK,
      );
      offset += flat.length / 2;
      if (flat.length / 2 < CHUNK) stream.done = true;
      for (let i = 0; i < flat.length; i += 2)
        stream.buffer.push({ target, queue, id: flat[i]!, bullState, time: Number(flat[i + 1]) });
    },
  };
  return stream;
}

/**
 * The deliveries still under way in a queue (at most LIVE_CAP of each kind), newest first; read at once, since their
 * time is in the job.
 */
async function liveStream(
  redis: Pipeline['redis'],
  queue: DeliveryQueue,
  target: string,
  max: number,
  min: number,
): Promise<Stream> {
  const kinds = ['active', 'waiting', 'prioritized', 'delayed'] as const;
  const lists = await Promise.all(kinds.map((k) => queue.getRanges([k], 0, LIVE_CAP - 1)));
  const candidates: Candidate[] = kinds.flatMap((k, i) =>
    lists[i]!.map((id) => ({ target, queue, id, bullState: k === 'prioritized' ? 'waiting' : k, time: 0 })),
  );
  await readDeliveries(redis, candidates);
  const buffer = candidates
    .filter((c) => c.delivery)
    .map((c) => ({ ...c, time: c.delivery!.processedOn ?? c.delivery!.timestamp }))
    .filter((c) => c.time <= max && c.time >= min)
    .sort((a, b) => b.time - a.time);
  return { buffer, done: true, fill: async () => undefined };
}

export function createEventSearch(pipeline: Pipeline, archive?: ArchiveHistory) {
  function queuesFor(target: string | undefined, state: DeliveryState | undefined): [string, DeliveryQueue][] {
    // A filtered row is read from the event's other deliveries, so every queue is read for it.
    if (target === undefined || state === 'filtered') return pipeline.deliveryQueues();
    const queue = pipeline.deliveryQueue(target);
    if (!queue) throw new UnknownTargetError(target);
    return [[target, queue]];
  }

  /**
   * Every row of one event: each target's delivery, each target its filter left out, or the event
   * itself when it has no delivery. A delivery whose job cannot be read has no row (the event page
   * says why); when no job of the event can be read, the lookup refuses (409).
   */
  async function rowsOfEvent(eventId: string): Promise<SearchRow[]> {
    const rows: SearchRow[] = [];
    for (const delivery of await pipeline.deliveriesOf(eventId)) {
      if ('unreadable' in delivery) continue;
      const { target, queue, job } = delivery;
      const [bullState, paused, logs] = await Promise.all([
        job.getState(),
        queue.isPaused(),
        queue.getJobLogs(job.id ?? ''),
      ]);
      const state = deliveryStateOf(bullState, job, paused);
      const attempts = attemptsAcrossSeries(job, bullState, logs.logs);
      rows.push(rowOf(target, job, state, job.finishedOn ?? job.processedOn ?? job.timestamp, attempts));
      for (const t of job.data.filtered ?? [])
        if (!rows.some((r) => r.target === t)) rows.push(rowOf(t, job, 'filtered', job.timestamp, 0));
    }
    if (rows.length > 0) return rows;
    const found = await pipeline.findEvent(eventId);
    if (!found) return archive ? archivedRows(await archive.event(eventId)) : [];
    const { data } = found.job;
    const at = iso(found.job.finishedOn ?? found.job.timestamp);
    return [
      {
        eventId,
        eventType: data.eventType,
        environment: data.environment,
        receivedAt: data.receivedAt,
        target: '',
        state: found.kind === 'quarantine' ? 'quarantined' : 'unrouted',
        attempts: 0,
        facts: factsOfBody(data),
        at,
      },
    ];
  }

  async function byText(text: string, query: SearchQuery): Promise<SearchPage> {
    const asEventId = isEventId(text);
    const ids = asEventId ? [text] : await eventIdsForRequest(pipeline, text, archive);
    const rows = (await Promise.all(ids.map(rowsOfEvent)))
      .flat()
      .filter((r) => matches(r, { ...query, state: query.state }));
    rows.sort((a, b) => b.receivedAt.localeCompare(a.receivedAt) || a.target.localeCompare(b.target));
    const page: SearchPage = { by: asEventId ? 'event_id' : 'request_id', rows, scanned: rows.length };
    return rows.some((r) => r.source === 'archive') ? { ...page, source: 'archive' } : page;
  }

  async function list(query: SearchQuery): Promise<SearchPage> {
    const limit = query.limit ?? 50;
    const cursor = decodeCursor(query.cursor);
    const max = cursor?.t ?? Infinity;
    // A delivery finishes after its event was received: one that finished before `from` was received before it too.
    const min = query.from ?? -Infinity;
    const shownAtMax = new Set(cursor?.s ?? []);
    const state = query.state;
    const wantsDone = !state || state === 'delivered' || state === 'filtered';
    const wantsFailed = !state || state === 'dead_letter' || state === 'filtered';
    const wantsLive = !state || !['delivered', 'dead_letter'].includes(state);
    const streams: Stream[] = [];
    for (const [target, queue] of queuesFor(query.target, state)) {
      if (wantsDone)
        streams.push(sortedSetStream(pipeline.redis, queue, target, queue.keys.completed!, 'completed', max, min));
      if (wantsFailed)
        streams.push(sortedSetStream(pipeline.redis, queue, target, queue.keys.failed!, 'failed', max, min));
    }
    const paused = new Map<string, boolean>();
    if (wantsLive) {
      const live = await Promise.all(
        queuesFor(query.target, state).map(async ([target, queue]) => {
          paused.set(target, await queue.isPaused());
          return liveStream(pipeline.redis, queue, target, max, min);
        }),
      );
      streams.push(...live);
    }

    /** The next candidates in time order (newest first), at most `n`, without the ones the previous page showed. */
    const take = async (n: number): Promise<Candidate[]> => {
      const out: Candidate[] = [];
      while (out.length < n) {
        await Promise.all(streams.filter((s) => s.buffer.length === 0 && !s.done).map((s) => s.fill()));
        let pick: Stream | undefined;
        for (const s of streams)
          if (s.buffer.length > 0 && (!pick || s.buffer[0]!.time > pick.buffer[0]!.time)) pick = s;
        if (!pick) break;
        const c = pick.buffer.shift()!;
        if (c.time === max && shownAtMax.has(`${c.target}/${c.id}`)) continue;
        out.push(c);
      }
      return out;
    };

    const rows: SearchRow[] = [];
    const seen = new Set<string>();
    let scanned = 0;
    let lastTime = max;
    let atLast: string[] = [...shownAtMax];
    // Read in growing batches: a page that fills at once reads about a page of jobs, a sparse filter reads more per
    // round trip.
    let batchSize = limit;
    while (rows.length < limit && scanned < SCAN_BUDGET) {
      const batch = await take(Math.min(batchSize, SCAN_BUDGET - scanned));
      if (batch.length === 0) return { by: 'list', rows, scanned };
      await readDeliveries(
        pipeline.redis,
        batch.filter((c) => !c.delivery),
      );
      for (const c of batch) {
        if (rows.length >= limit) break;
        scanned += 1;
        if (c.time !== lastTime) {
          lastTime = c.time;
          atLast = [];
        }
        atLast.push(`${c.target}/${c.id}`);
        if (!c.delivery) continue;
        const deliveryState = deliveryStateOf(c.bullState, c.delivery, paused.get(c.target) ?? false);
        for (const row of rowsOf(c.target, c.delivery, c.bullState, deliveryState, c.time)) {
          const key = `${row.target}/${row.eventId}`;
          if (seen.has(key) || !matches(row, query)) continue;
          seen.add(key);
          rows.push(row);
        }
      }
      batchSize = Math.min(batchSize * 2, 1000);
    }
    const next = encodeCursor({ t: lastTime, s: atLast });
    return {
      by: 'list',
      rows,
      scanned,
      next,
      ...(rows.length < limit ? { budgetSpent: true, reachedBack: iso(lastTime) } : {}),
    };
  }

  return {
    /**
     * A request id, an event id or a webhook-id when `q` is given (every match, filters applied); otherwise a page of
     * the list.
     */
    async search(query: SearchQuery): Promise<SearchPage> {
      const text = query.q?.trim();
      return text ? byText(text, query) : list(query);
    },
  };
}
