import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Result } from 'ioredis';
import type { EventType } from '../model/event-table';
import { expectationMatchField, ownKeys } from '../model/names';
import { requestIndexBuckets } from '../pipeline/request-index';
import { loadLua } from '../redis/lua';
import type { RedisClient } from '../redis/connect';
import { ExpectationError } from './errors';
import { expectationOf, isExpectationState, type Expectation, type ExpectationState } from './expectation';

type Args = (string | number)[];
declare module 'ioredis' {
  interface RedisCommander<Context> {
    webhookExpectCreate(...args: Args): Result<string[], Context>;
    webhookExpectClaim(...args: Args): Result<string[], Context>;
    webhookExpectSettle(...args: Args): Result<number, Context>;
    webhookExpectArrive(...args: Args): Result<[string, string, string] | null, Context>;
    webhookExpectCancel(...args: Args): Result<string, Context>;
    webhookExpectNote(...args: Args): Result<number, Context>;
    webhookExpectPurge(...args: Args): Result<number, Context>;
  }
}

const LUA_DIR = path.join(__dirname, 'lua');
/** The scripts that change an expectation append it to the archive stream with this (when the archive is on). */
const ARCHIVING = { 'expect-archive': loadLua(LUA_DIR, 'expect-archive') };
/** Each script file, by the command it is defined as (EVALSHA; the number of keys comes first in each call). */
const SCRIPTS = {
  webhookExpectCreate: loadLua(LUA_DIR, 'expect-create', ARCHIVING),
  webhookExpectClaim: loadLua(LUA_DIR, 'expect-claim', ARCHIVING),
  webhookExpectSettle: loadLua(LUA_DIR, 'expect-settle', ARCHIVING),
  webhookExpectArrive: loadLua(LUA_DIR, 'expect-arrive', ARCHIVING),
  webhookExpectCancel: loadLua(LUA_DIR, 'expect-cancel', ARCHIVING),
  webhookExpectNote: loadLua(LUA_DIR, 'expect-note', ARCHIVING),
  webhookExpectPurge: loadLua(LUA_DIR, 'expect-purge'),
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

/**
 * An expectation added (or the open one already there), and, for a new one, the event ids the request-id
 * index held for its request_id as it was added: notifications that arrived before it, one of which may
 * meet it.
 */
export interface Created {
  expectation: Expectation;
  created: boolean;
  arrivedBefore: string[];
}

export interface ExpectationStore {
  create(e: NewExpectation, maxOpen: number, nowMs: number): Promise<Created>;
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
  /** Adds fields to a kept expectation (what became of it after it settled). */
  note(id: string, fields: Record<string, string>): Promise<void>;
  /** Claims an answer's nonce: false when it was seen before (a replayed answer). */
  claimNonce(nonce: string, ttlMs: number): Promise<boolean>;
  purge(cutoffMs: number, limit: number): Promise<number>;
}

export interface ExpectationStoreOptions {
  /** Whether each change is appended to the archive stream (ARCHIVE_URL set). @defaultValue false */
  archive?: boolean;
  /** How long the request-id index holds a notification (the de-duplication window). @defaultValue 7 days */
  dedupWindowMs?: number;
}

const WEEK_MS = 7 * 86_400_000;

/**
 * The expectations in Redis, under the service's key prefix; every change is one script call (EVALSHA),
 * which with the archive on also appends the expectation as changed to the archive stream, in the same call.
 */
export function createExpectationStore(
  redis: RedisClient,
  prefix: string,
  { archive = false, dedupWindowMs = WEEK_MS }: ExpectationStoreOptions = {},
): ExpectationStore {
  for (const [name, lua] of Object.entries(SCRIPTS)) redis.defineCommand(name, { lua });
  /** The archive stream as a script's last key, when the archive is on. */
  const stream = archive ? [ownKeys.archive(prefix)] : [];
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
      const buckets = requestIndexBuckets(prefix, e.requestId, dedupWindowMs, nowMs);
      const keys = [
        ownKeys.expectation(prefix, id),
        open,
        due,
        all,
        match,
        ownKeys.expectationsOfRequest(prefix, e.requestId),
        ...buckets,
        ...stream,
      ];
      const [outcome, found, ...indexed] = await redis.webhookExpectCreate(
        keys.length,
        ...keys,
        maxOpen,
        expectationMatchField(e.environment, e.eventType, e.requestId),
        id,
        e.dueByMs,
        nowMs,
        hashPrefix,
        buckets.length,
        e.requestId,
        ...Object.entries(fields).flat(),
      );
      if (outcome === 'full') {
        throw new ExpectationError(
          'too_many_expectations',
          429,
          `${maxOpen} expectations are open already (maxOpenExpectations)`,
        );
      }
      const expectation = await get(found ?? '');
      if (!expectation) throw new ExpectationError('not_found', 404, `expectation ${found} vanished as it was written`);
      const arrivedBefore = [...new Set(indexed.flatMap((ids) => ids.split(',')))].sort();
      return { expectation, created: outcome === 'created', arrivedBefore };
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
      const keys = [ownKeys.expectation(prefix, id), due, open, ...stream];
      const result = await redis.webhookExpectCancel(keys.length, ...keys, id, nowMs, by);
      if (result === 'not_found') throw new ExpectationError('not_found', 404, `no expectation ${id}`);
      if (result !== 'done') throw new ExpectationError('not_open', 409, `expectation ${id} is ${result}, not open`);
      const expectation = await get(id);
      if (!expectation) throw new ExpectationError('not_found', 404, `no expectation ${id}`);
      return expectation;
    },
    openCount: () => redis.zcard(open),
    async claimDue(nowMs, leaseMs, limit) {
      const keys = [due, ...stream];
      const flat = await redis.webhookExpectClaim(keys.length, ...keys, nowMs, leaseMs, limit, hashPrefix);
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
      const keys = [ownKeys.expectation(prefix, claim.id), due, open, ...stream];
      const recorded = await redis.webhookExpectSettle(
        keys.length,
        ...keys,
        claim.id,
        claim.attempt,
        state,
        nextAtMs,
        ...Object.entries(fields).flat(),
      );
      return recorded === 1;
    },
    async arrived(environment, eventType, requestId, eventId, nowMs) {
      const keys = [match, due, open, ...stream];
      const r = await redis.webhookExpectArrive(
        keys.length,
        ...keys,
        expectationMatchField(environment, eventType, requestId),
        eventId,
        nowMs,
        hashPrefix,
      );
      return r ? { id: r[0], outcome: r[1] as Arrival['outcome'], previous: r[2] } : undefined;
    },
    async note(id, fields) {
      const keys = [ownKeys.expectation(prefix, id), ...stream];
      await redis.webhookExpectNote(keys.length, ...keys, ...Object.entries(fields).flat());
    },
    async claimNonce(nonce, ttlMs) {
      return (await redis.set(ownKeys.inquiryNonce(prefix, nonce), '1', 'PX', ttlMs, 'NX')) === 'OK';
    },
    async purge(cutoffMs, limit) {
      return redis.webhookExpectPurge(
        2,
        all,
        match,
        cutoffMs,
        limit,
        hashPrefix,
        ownKeys.expectationsOfRequest(prefix, ''),
      );
    },
  };
}
