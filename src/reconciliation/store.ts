import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { EventType } from '../model/event-table';
import { ownKeys } from '../model/names';
import { loadLua } from '../redis/lua';
import type { RedisClient } from '../redis/connect';
import { ExpectationError } from './errors';
import { isExpectationState, type Expectation, type ExpectationState } from './expectation';

const LUA_DIR = path.join(__dirname, 'lua');
const SCRIPTS = {
  create: loadLua(LUA_DIR, 'expect-create'),
  claim: loadLua(LUA_DIR, 'expect-claim'),
  settle: loadLua(LUA_DIR, 'expect-settle'),
  arrive: loadLua(LUA_DIR, 'expect-arrive'),
  cancel: loadLua(LUA_DIR, 'expect-cancel'),
  purge: loadLua(LUA_DIR, 'expect-purge'),
};

/** An expectation to add, its due time resolved. */
export interface NewExpectation {
  eventType: EventType;
  environment: string;
  requestId: string;
  dueByMs: number;
  createdBy: string;
}

/** One claimed attempt: the expectation, which attempt, and the due time it was claimed for. */
export interface Claim {
  id: string;
  attempt: number;
  /** `open` when this claim is the one that found it overdue. */
  previous: ExpectationState;
  dueAtMs: number;
}

export type Arrival = { id: string; outcome: 'met' | 'late' | 'none'; previous: string };

export interface ExpectationStore {
  create(e: NewExpectation, maxOpen: number, nowMs: number): Promise<{ expectation: Expectation; created: boolean }>;
  get(id: string): Promise<Expectation | undefined>;
  /** Newest first. */
  list(opts: { state?: ExpectationState; limit: number }): Promise<Expectation[]>;
  ofRequest(requestId: string): Promise<Expectation[]>;
  cancel(id: string, by: string, nowMs: number): Promise<Expectation>;
  openCount(): Promise<number>;
  claimDue(nowMs: number, leaseMs: number, limit: number): Promise<Claim[]>;
  /** Records an attempt's finding; false when the attempt is no longer its own (met, cancelled, taken over). */
  settle(
    claim: Claim,
    state: 'overdue' | 'missing_notification' | 'unresolved',
    nextAtMs: number,
    fields: Record<string, string>,
  ): Promise<boolean>;
  arrived(
    environment: string,
    eventType: EventType,
    requestId: string,
    eventId: string,
    nowMs: number,
  ): Promise<Arrival | undefined>;
  /** Adds fields to an expectation (what became of it after it settled). */
  note(id: string, fields: Record<string, string>): Promise<void>;
  /** Claims an answer's nonce: false when it was seen before (a replayed answer). */
  claimNonce(nonce: string, ttlMs: number): Promise<boolean>;
  purge(cutoffMs: number, limit: number): Promise<number>;
}

const matchField = (environment: string, eventType: string, requestId: string) =>
  `${environment} ${eventType} ${requestId}`;

/** The expectations in Redis, under the service's key prefix; every change is one script call. */
export function createExpectationStore(redis: RedisClient, prefix: string): ExpectationStore {
  const hashPrefix = ownKeys.expectation(prefix, '');
  const due = ownKeys.expectationsDue(prefix);
  const open = ownKeys.expectationsOpen(prefix);
  const all = ownKeys.expectationsAll(prefix);
  const match = ownKeys.expectationMatch(prefix);

  async function get(id: string): Promise<Expectation | undefined> {
    const h = await redis.hgetall(ownKeys.expectation(prefix, id));
    return expectationOf(h);
  }

  async function getMany(ids: readonly string[]): Promise<Expectation[]> {
    const found = await Promise.all(ids.map(get));
    return found.filter((e): e is Expectation => e !== undefined);
  }

  return {
    async create(e, maxOpen, nowMs) {
      const id = `exp_${randomBytes(12).toString('hex')}`;
      const fields = {
        id,
        eventType: e.eventType,
        environment: e.environment,
        requestId: e.requestId,
        dueBy: String(e.dueByMs),
        createdAt: String(nowMs),
        createdBy: e.createdBy,
        state: 'open',
        updatedAt: String(nowMs),
        attempt: '0',
      };
      const [outcome, found] = (await redis.eval(
        SCRIPTS.create,
        6,
        ownKeys.expectation(prefix, id),
        open,
        due,
        all,
        match,
        ownKeys.expectationsOfRequest(prefix, e.requestId),
        maxOpen,
        matchField(e.environment, e.eventType, e.requestId),
        id,
        e.dueByMs,
        nowMs,
        hashPrefix,
        ...Object.entries(fields).flat(),
      )) as [string, string];
      if (outcome === 'full') {
        throw new ExpectationError(
          'too_many_expectations',
          429,
          `${maxOpen} expectations are open already (maxOpenExpectations)`,
        );
      }
      const expectation = await get(found);
      if (!expectation) throw new ExpectationError('not_found', 404, `expectation ${found} vanished as it was written`);
      return { expectation, created: outcome === 'created' };
    },
    get,
    async list({ state, limit }) {
      // Newest first; a state filter reads further back, in pages, until the limit is filled.
      const out: Expectation[] = [];
      const page = Math.max(limit, 100);
      for (let start = 0; out.length < limit; start += page) {
        const ids = await redis.zrevrange(all, start, start + page - 1);
        if (ids.length === 0) break;
        for (const e of await getMany(ids)) if (!state || e.state === state) out.push(e);
        if (!state) break;
      }
      return out.slice(0, limit);
    },
    async ofRequest(requestId) {
      const ids = await redis.smembers(ownKeys.expectationsOfRequest(prefix, requestId));
      const found = await getMany(ids);
      return found.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    },
    async cancel(id, by, nowMs) {
      const result = (await redis.eval(
        SCRIPTS.cancel,
        3,
        ownKeys.expectation(prefix, id),
        due,
        open,
        id,
        nowMs,
        by,
      )) as string;
      if (result === 'not_found') throw new ExpectationError('not_found', 404, `no expectation ${id}`);
      if (result !== 'done') throw new ExpectationError('not_open', 409, `expectation ${id} is ${result}, not open`);
      const expectation = await get(id);
      if (!expectation) throw new ExpectationError('not_found', 404, `no expectation ${id}`);
      return expectation;
    },
    openCount: () => redis.zcard(open),
    async claimDue(nowMs, leaseMs, limit) {
      const flat = (await redis.eval(SCRIPTS.claim, 1, due, nowMs, leaseMs, limit, hashPrefix)) as string[];
      const claims: Claim[] = [];
      for (let i = 0; i < flat.length; i += 4) {
        const previous = flat[i + 2]!;
        claims.push({
          id: flat[i]!,
          attempt: Number(flat[i + 1]),
          previous: isExpectationState(previous) ? previous : 'overdue',
          dueAtMs: Number(flat[i + 3]),
        });
      }
      return claims;
    },
    async settle(claim, state, nextAtMs, fields) {
      const recorded = await redis.eval(
        SCRIPTS.settle,
        3,
        ownKeys.expectation(prefix, claim.id),
        due,
        open,
        claim.id,
        claim.attempt,
        state,
        nextAtMs,
        ...Object.entries(fields).flat(),
      );
      return recorded === 1;
    },
    async arrived(environment, eventType, requestId, eventId, nowMs) {
      const r = (await redis.eval(
        SCRIPTS.arrive,
        3,
        match,
        due,
        open,
        matchField(environment, eventType, requestId),
        eventId,
        nowMs,
        hashPrefix,
      )) as [string, Arrival['outcome'], string] | null;
      return r ? { id: r[0], outcome: r[1], previous: r[2] } : undefined;
    },
    async note(id, fields) {
      await redis.hset(ownKeys.expectation(prefix, id), fields);
    },
    async claimNonce(nonce, ttlMs) {
      return (await redis.set(ownKeys.inquiryNonce(prefix, nonce), '1', 'PX', ttlMs, 'NX')) === 'OK';
    },
    async purge(cutoffMs, limit) {
      return (await redis.eval(
        SCRIPTS.purge,
        2,
        all,
        match,
        cutoffMs,
        limit,
        hashPrefix,
        ownKeys.expectationsOfRequest(prefix, ''),
      )) as number;
    },
  };
}

const iso = (ms: string | undefined) => new Date(Number(ms)).toISOString();

/** The hash as the API shows it; undefined for a missing or damaged one. */
function expectationOf(h: Record<string, string>): Expectation | undefined {
  if (!h.id || !h.eventType || !h.environment || !h.requestId || !isExpectationState(h.state)) return undefined;
  const optional = (name: string, value: string | undefined) => (value ? { [name]: value } : {});
  return {
    id: h.id,
    eventType: h.eventType as EventType,
    environment: h.environment,
    requestId: h.requestId,
    dueBy: iso(h.dueBy),
    createdAt: iso(h.createdAt),
    createdBy: h.createdBy ?? '',
    state: h.state,
    updatedAt: iso(h.updatedAt),
    attempts: Number(h.attempt ?? 0),
    ...optional('metBy', h.metBy),
    ...optional('lastOutcome', h.lastOutcome),
    ...optional('inquiryEventId', h.inquiryEventId),
    ...optional('lateEventId', h.lateEventId),
    ...optional('cancelledBy', h.cancelledBy),
  };
}
