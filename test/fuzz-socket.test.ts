import fc from 'fast-check';
import { EVENT_TYPES } from '../src/model/event-table';
import { startWorkers, type RunningWorkers } from '../src/forwarding/workers';
import { targetSchema } from '../src/model/target-schema';
import { createLogger } from '../src/logging/logger';
import { LogCapture } from './support/harness';
import { startLiveReceiver, type LiveReceiver } from './support/live-receiver';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { exchange, type Exchange } from './support/raw-http';
import { mutantArb, serialize, splitInto, type Mutant, type RequestParts } from './support/request-mutations';
import { TargetServer } from './support/target-server';
import { createRedisConnector } from '../src/redis/connect';

const RUNS = 2000;
const CONCURRENCY = 200;
/** Printed, and read back from FUZZ_SEED, so a failing run can be replayed exactly. */
const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const REFUSALS = new Set([400, 401, 403, 404, 405, 408, 413, 417, 431]);

/**
 * How a mutant goes on the wire: at once (split into its 1 to 4 writes), slowly (2 to 8 writes with a
 * pause between them), or partially (a slow or quick prefix of it, never finished, so the server must
 * time it out with a 408 rather than wait, crash or let it through).
 */
type Sending =
  | { how: 'at-once' }
  | { how: 'slow'; pieces: number; delayMs: number }
  | { how: 'partial'; keep: number; pieces: number; delayMs: number };
const sendingArb: fc.Arbitrary<Sending> = fc.oneof(
  { arbitrary: fc.constant({ how: 'at-once' as const }), weight: 2 },
  {
    arbitrary: fc.record({
      how: fc.constant('slow' as const),
      pieces: fc.integer({ min: 2, max: 8 }),
      delayMs: fc.integer({ min: 20, max: 250 }),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      how: fc.constant('partial' as const),
      keep: fc.double({ min: 0.02, max: 0.98, noNaN: true }),
      pieces: fc.integer({ min: 1, max: 4 }),
      delayMs: fc.integer({ min: 0, max: 150 }),
    }),
    weight: 1,
  },
);

function sendMutant(m: Mutant, sending: Sending): Promise<Exchange> {
  const common = { headRequests: m.head ? 1 : 0, settleMs: 100, timeoutMs: 30_000 };
  if (sending.how === 'at-once')
    return exchange(live.port, m.bytes, { ...common, pieces: splitInto(m.bytes, m.pieces) });
  const bytes =
    sending.how === 'partial'
      ? m.bytes.subarray(0, Math.max(1, Math.min(m.bytes.length - 1, Math.floor(m.bytes.length * sending.keep))))
      : m.bytes;
  return exchange(live.port, bytes, {
    ...common,
    pieces: splitInto(bytes, sending.pieces),
    pieceDelayMs: sending.delayMs,
  });
}

function describeSending(s: Sending): string {
  return s.how === 'at-once'
    ? 'at once'
    : s.how === 'slow'
      ? `slowly, ${s.pieces} writes ${s.delayMs} ms apart`
      : `partially (${(s.keep * 100).toFixed(0)}%), ${s.pieces} writes ${s.delayMs} ms apart`;
}

const platform = new FakePlatform();
const sandbox = new FakePlatform();
let live: LiveReceiver;
let target: TargetServer;
let workers: RunningWorkers;
let base: RequestParts;

beforeAll(async () => {
  target = await TargetServer.start();
  live = await startLiveReceiver({ PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64 }, (c) => ({
    ...c,
    platformPublicKeys: [],
    // Two environments, as a merchant with sandbox and production runs it: every mutant is judged
    // against both environments' keys.
    environments: {
      production: { publicKeys: [platform.keys.publicKeyBase64] },
      sandbox: { publicKeys: [sandbox.keys.publicKeyBase64] },
    },
    // Short server timeouts so requests that never complete are answered 408 within the run.
    http: { headersTimeoutMs: 1000, requestTimeoutMs: 1500, keepAliveTimeoutMs: 300 },
    // The CONCURRENCY connections all come from 127.0.0.1: one source's share lifted for them.
    maxConnectionsPerSource: 10_000,
    targets: [
      targetSchema.parse({ name: 'sink', url: target.url, events: ['*'], backoff: { initialMs: 50, maxMs: 200 } }),
    ],
  }));
  workers = startWorkers(
    live.config,
    live.pipeline,
    createLogger('warn', new LogCapture().stream),
    live.metrics,
    createRedisConnector(live.config),
  );
  const n = platform.signed('payment.result', { query: '?merchant=M1&note=a%20b' });
  base = {
    method: 'POST',
    target: n.target,
    version: 'HTTP/1.1',
    headers: [['Host', 'localhost'], ...Object.entries(n.headers), ['Content-Length', String(n.body.length)]],
    body: n.body,
  };
});
afterAll(async () => {
  await workers.close();
  await live.close();
  await target.close();
});

async function inPool<T, R>(items: T[], size: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: size }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await run(items[i] as T);
    }
  });
  await Promise.all(lanes);
  return results;
}

/** What is wrong with the server's handling of one mutant, if anything. */
function problemsOf(m: Mutant, ex: Exchange): string[] {
  if (ex.responses.length === 0)
    return [
      ex.closedByServer ? `dropped without an answer (${ex.error ?? 'closed'})` : 'no answer before the client gave up',
    ];
  const problems: string[] = [];
  ex.responses.forEach((r, i) => {
    if (!REFUSALS.has(r.status)) problems.push(`answered ${r.status}`);
    if (r.headers['x-content-type-options'] !== 'nosniff')
      problems.push(`answer ${r.status} without the security headers`);
    if (m.head && i === 0) return;
    let retCode: unknown;
    try {
      retCode = (JSON.parse(r.body.toString('utf8')) as { ret_code?: unknown }).ret_code;
    } catch {
      retCode = undefined;
    }
    const expected = r.status === 200 ? '000000' : String(r.status);
    if (typeof retCode !== 'string' || !retCode.startsWith(expected))
      problems.push(`answer ${r.status} without its envelope`);
  });
  return problems;
}

function show(bytes: Buffer): string {
  return (
    JSON.stringify(bytes.subarray(0, 240).toString('latin1')) + (bytes.length > 240 ? ` …(${bytes.length} bytes)` : '')
  );
}

describe('the running service under mutated requests on raw sockets', () => {
  it(`when ${RUNS} mutations of a signed notification arrive, at once, slowly or partially, then each is answered 4xx with the envelope, none is queued and none forwarded, and the genuine request still gets through`, async () => {
    console.log(`fuzz-socket: seed ${SEED} (FUZZ_SEED=${SEED} npx jest test/fuzz-socket.test.ts replays this run)`);
    const ctx = {
      base,
      signedHeaders: ['x-svc-timestamp', 'x-svc-nonce', 'x-svc-sign'],
      checkedHeaders: ['x-svc-sign-alg'],
      signHeader: 'x-svc-sign',
      bodyLimitBytes: live.config.bodyLimitBytes,
    };
    const sampled = fc.sample(fc.tuple(mutantArb(ctx), sendingArb), { seed: SEED, numRuns: RUNS });
    const mutants = sampled.map(([m]) => m);

    const started = Date.now();
    const results = await inPool(sampled, CONCURRENCY, ([m, sending]) => sendMutant(m, sending));
    const tookMs = Date.now() - started;

    const failures = sampled.flatMap(([m, sending], i) =>
      problemsOf(m, results[i] as Exchange).map(
        (p) => `#${i} ${m.kind} (${m.detail}) sent ${describeSending(sending)}: ${p}\n    sent ${show(m.bytes)}`,
      ),
    );
    const bySending = new Map<string, Map<number, number>>();
    sampled.forEach(([, sending], i) => {
      const statuses = bySending.get(sending.how) ?? new Map<number, number>();
      const first = (results[i] as Exchange).responses[0]?.status ?? 0;
      statuses.set(first, (statuses.get(first) ?? 0) + 1);
      bySending.set(sending.how, statuses);
    });
    const byKind = new Map<string, Map<number, number>>();
    mutants.forEach((m, i) => {
      const statuses = byKind.get(m.kind) ?? new Map<number, number>();
      const first = (results[i] as Exchange).responses[0]?.status ?? 0;
      statuses.set(first, (statuses.get(first) ?? 0) + 1);
      byKind.set(m.kind, statuses);
    });
    console.log(
      `fuzz-socket: ${RUNS} mutants in ${tookMs} ms; first answer by kind:\n` +
        [...byKind, ...[...bySending].map(([how, s]) => [`(sent ${how})`, s] as const)]
          .map(
            ([kind, s]) =>
              `  ${kind.padEnd(20)} ${[...s]
                .sort(([a], [b]) => a - b)
                .map(([st, n]) => `${st}×${n}`)
                .join(' ')}`,
          )
          .join('\n'),
    );
    if (failures.length > 0)
      throw new Error(
        `seed ${SEED}: ${failures.length} of ${RUNS} mutants mishandled (replay with FUZZ_SEED=${SEED}):\n${failures.slice(0, 15).join('\n')}`,
      );

    // Nothing was acknowledged, so nothing may be stored, and the workers have nothing to forward.
    await new Promise((r) => setTimeout(r, 300));
    const queues = live.pipeline.allQueues();
    expect(queues.length).toBe(EVENT_TYPES.length + 2); // the event queues, quarantine, and the target's
    for (const queue of queues) {
      const counts = await queue.getJobCounts();
      expect([queue.name, Object.values(counts).reduce((a, b) => a + b, 0)]).toEqual([queue.name, 0]);
    }
    for (const type of EVENT_TYPES) {
      for (const outcome of ['accepted', 'replay', 'duplicate', 'quarantined']) {
        expect([type, outcome, await counterValue(live.metrics.notifications, { event_type: type, outcome })]).toEqual([
          type,
          outcome,
          0,
        ]);
      }
    }
    expect(target.requests).toHaveLength(0);

    expect([...bySending.keys()].sort()).toEqual(['at-once', 'partial', 'slow']);
    // Most partial sends end mid-request: the server times them out with a 408 rather than waiting.
    expect(bySending.get('partial')!.get(408)).toBeGreaterThan(0);

    // The control: the unmutated request (its nonce untouched by all the forgeries), sent slowly, is accepted and forwarded once.
    const control = serialize({ ...base, headers: [...base.headers, ['Connection', 'close']] });
    const genuine = await exchange(live.port, control, { pieces: splitInto(control, 5), pieceDelayMs: 100 });
    expect(genuine.responses.map((r) => r.status)).toEqual([200]);
    await target.waitFor(() => target.requests.length === 1);
    expect(JSON.parse(target.requests[0]!.body.toString('utf8'))).toMatchObject({ type: 'payment.result' });
  }, 120_000); // about 10 s alone; a loaded shared machine can stretch it several times
});
