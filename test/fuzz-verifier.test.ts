import fc from 'fast-check';
import { EVENT_TABLE } from '../src/model/event-table';
import type { SignedRequest } from '../src/signature/options';
import { createPrecheck, type Precheck } from '../src/signature/precheck';
import { createVerifier, type Verifier } from '../src/signature/verify';
import { genuinePool, type Genuine, type Wire } from './support/fuzz-requests';
import type { VerifierOptions } from '../src/signature/options';
import { NOW_MS, rsaKeyPair, verifierOptions } from './support/signed-request';
import { currentMutation, legacyMutation, mutate, type Mutation } from './support/wire-mutations';

// Property-based tests over the pure verifier. Each run draws a fresh seed unless FUZZ_SEED
// is set; a failure prints the seed and path, and FUZZ_SEED=<seed> FUZZ_PATH=<path> replays exactly
// that counterexample. RSA is the cost: a refused request is checked against both trusted keys, and
// signing costs far more than verifying, so genuine requests are signed once into a pool and mutated.
const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const PATH = process.env.FUZZ_PATH;
const RUNS = {
  currentMutations: 35_000,
  legacyMutations: 30_000,
  currentEquivalents: 17_500,
  legacyEquivalents: 17_500,
};
const POOL_SIZE = 48;
const LONG = 180_000; // seconds on a quiet machine; generous for a shared, loaded one

const platformA = rsaKeyPair();
const platformB = rsaKeyPair();
const foreign = rsaKeyPair();
/**
 * Two environments, as a merchant with sandbox and production configures them: key A signs
 * production, key B sandbox. Every genuine request must verify to the environment of its key.
 */
function twoEnvironments(over: Parameters<typeof verifierOptions>[1] = {}): VerifierOptions {
  const options = verifierOptions([], over);
  const [settings] = options.environments;
  return {
    ...options,
    environments: [
      { ...settings!, name: 'production', keys: [platformA.publicKey] },
      { ...settings!, name: 'sandbox', keys: [platformB.publicKey] },
    ],
  };
}
/** appid configured: a present appid header must be the platform's. */
const strict = createVerifier(twoEnvironments());
const strictPrecheck = createPrecheck(twoEnvironments());
/** appid not configured: the header is unsigned and free. */
const open = createVerifier(twoEnvironments({ appId: undefined }));
const openPrecheck = createPrecheck(twoEnvironments({ appId: undefined }));
const pool = genuinePool(SEED, POOL_SIZE, [platformA.privateKey, platformB.privateKey], foreign.privateKey, [
  'production',
  'sandbox',
]);
const currentPool = pool.filter((g) => g.scheme === 'current');
const legacyPool = pool.filter((g) => g.scheme === 'legacy');

function asRequest(w: Wire): SignedRequest {
  return { method: w.method, target: w.target, headers: w.headers, body: w.body, nowMs: NOW_MS };
}

function params(numRuns: number): { seed: number; numRuns: number; includeErrorInReport: boolean; path?: string } {
  return { seed: SEED, numRuns, includeErrorInReport: true, ...(PATH !== undefined ? { path: PATH } : {}) };
}

/** Counts what the runs covered, so the report can say it and a silent generator cannot hide. */
const seen = new Map<string, number>();
function count(kind: string): void {
  seen.set(kind, (seen.get(kind) ?? 0) + 1);
}

/** No mutation verifies; and when the precheck refuses it before the body, the verifier agrees exactly. */
function neverVerifies(verify: Verifier, precheck: Precheck, g: Genuine, m: Mutation): void {
  count(`${g.scheme}:${m.kind}`);
  const request = asRequest(mutate(g, m));
  const result = verify(request);
  if (result.ok) throw new Error(`a ${m.kind} mutation of a ${g.scheme} request verified`);
  const early = precheck(request.headers, request.nowMs);
  if (early && (early.reason !== result.reason || early.detail !== result.detail)) {
    throw new Error(
      `the precheck said ${early.reason} (${early.detail}), the verifier ${result.reason} (${result.detail})`,
    );
  }
}

/**
 * Equivalent spellings of one signature: after one URL-decode the same canonical Base64. Each
 * character may stay literal or become %XX in upper or lower case; at most 40 are escaped so the
 * header stays within its 500-character bound.
 */
const spelling = fc.uniqueArray(fc.record({ at: fc.nat({ max: 343 }), lower: fc.boolean() }), {
  maxLength: 40,
  selector: (e) => e.at,
});
function spell(base64: string, escapes: { at: number; lower: boolean }[]): string {
  const chars = [...base64];
  for (const { at, lower } of escapes) {
    if (at >= chars.length) continue;
    const hex = chars[at]!.charCodeAt(0).toString(16).padStart(2, '0');
    chars[at] = `%${lower ? hex : hex.toUpperCase()}`;
  }
  return chars.join('');
}

const token = fc.stringMatching(/^[A-Za-z0-9._ -]{0,40}$/);
const unsignedHeaders = fc.record(
  {
    'x-merch-id': fc.stringMatching(/^[A-Za-z0-9_-]{1,32}$/),
    'user-agent': token,
    'content-type': fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8'),
    'x-forwarded-for': fc.ipV4(),
    'x-request-id': token,
    'x-svc-sign-alg': fc.constant('SHA256_WITH_RSA'),
  },
  { requiredKeys: [] },
);

describe(`the pure verifier under property-based fuzzing (seed ${SEED})`, () => {
  afterAll(() => {
    const total = [...seen.values()].reduce((a, b) => a + b, 0);
    console.log(
      `fuzz-verifier seed ${SEED}: ${total} cases\n${[...seen]
        .sort()
        .map(([k, n]) => `  ${k} ${n}`)
        .join('\n')}`,
    );
  });

  it(
    'when current-scheme signed content is mutated, then it never verifies (and the precheck never disagrees)',
    () => {
      fc.assert(
        fc.property(fc.nat(currentPool.length - 1), currentMutation, (i, m) =>
          neverVerifies(strict, strictPrecheck, currentPool[i]!, m),
        ),
        params(RUNS.currentMutations),
      );
      expect(seen.get('current:foreign-key')).toBeGreaterThan(0);
    },
    LONG,
  );

  it(
    'when legacy signed content is mutated (body, its timestamp, the signature), then it never verifies',
    () => {
      fc.assert(
        fc.property(fc.nat(legacyPool.length - 1), legacyMutation, (i, m) =>
          neverVerifies(strict, strictPrecheck, legacyPool[i]!, m),
        ),
        params(RUNS.legacyMutations),
      );
      expect(seen.get('legacy:legacy-body-timestamp')).toBeGreaterThan(0);
    },
    LONG,
  );

  it('when a legacy request is verified for another merchant id, then it never verifies', () => {
    const otherMerchant = createVerifier(twoEnvironments({ merchantId: 'M100024' }));
    for (const g of legacyPool)
      expect(otherMerchant(asRequest(g.wire))).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  it(
    'when a current-scheme request is re-spelled or its unsigned headers change, then it verifies to its nonce',
    () => {
      const appId = fc.option(fc.stringMatching(/^[a-z0-9-]{1,64}$/), { nil: undefined });
      fc.assert(
        fc.property(fc.nat(currentPool.length - 1), spelling, unsignedHeaders, appId, (i, escapes, extra, app) => {
          count('current:equivalent');
          const g = currentPool[i]!;
          const headers: Record<string, string> = {
            ...g.wire.headers,
            ...extra,
            'x-svc-sign': spell(g.signature, escapes),
          };
          if (app === undefined) delete headers['x-svc-appid'];
          else headers['x-svc-appid'] = app;
          const result = open(asRequest({ ...g.wire, headers }));
          if (!result.ok) throw new Error(`an equivalent request was refused: ${result.reason} (${result.detail})`);
          if (openPrecheck(headers, NOW_MS)) throw new Error('the precheck refused an equivalent request');
          if (result.replayKey !== g.replayKey || result.timestamp !== g.timestamp)
            throw new Error(`replay key ${result.replayKey}, expected ${g.replayKey}`);
          if (result.environment !== g.environment)
            throw new Error(`environment ${result.environment}, expected ${g.environment}`);
        }),
        params(RUNS.currentEquivalents),
      );
    },
    LONG,
  );

  it(
    'when a legacy request is re-spelled, moved to another path or its unsigned headers change, then it verifies to one replay key',
    () => {
      const target = fc
        .tuple(
          fc.constantFrom(...EVENT_TABLE.map((e) => e.path)),
          fc.option(fc.stringMatching(/^[a-z]{1,5}=[a-z0-9]{0,5}$/)),
        )
        .map(([p, q]) => (q ? `${p}?${q}` : p));
      fc.assert(
        fc.property(fc.nat(legacyPool.length - 1), spelling, unsignedHeaders, target, (i, escapes, extra, path) => {
          count('legacy:equivalent');
          const g = legacyPool[i]!;
          const headers = { ...g.wire.headers, ...extra, signature: spell(g.signature, escapes) };
          delete headers['x-svc-sign-alg']; // a current-scheme header would hand the request to that scheme
          const result = strict(asRequest({ ...g.wire, target: path, headers }));
          if (!result.ok) throw new Error(`an equivalent request was refused: ${result.reason} (${result.detail})`);
          if (strictPrecheck(headers, NOW_MS)) throw new Error('the precheck refused an equivalent request');
          if (result.replayKey !== g.replayKey || result.timestamp !== g.timestamp)
            throw new Error(`replay key ${result.replayKey}, expected ${g.replayKey}`);
          if (result.environment !== g.environment)
            throw new Error(`environment ${result.environment}, expected ${g.environment}`);
        }),
        params(RUNS.legacyEquivalents),
      );
    },
    LONG,
  );

  it('ran at least 100,000 generated cases over both schemes and every kind of mutation', () => {
    const total = [...seen.values()].reduce((a, b) => a + b, 0);
    if (PATH === undefined) expect(total).toBeGreaterThanOrEqual(100_000);
    const kinds = [...seen.keys()];
    for (const kind of [
      'body-flip',
      'body-last-byte',
      'header-repeat',
      'signature-non-canonical',
      'signature-bit',
      'foreign-key',
    ]) {
      expect(kinds).toEqual(expect.arrayContaining([`current:${kind}`, `legacy:${kind}`]));
    }
    for (const kind of [
      'target-char',
      'target-query',
      'target-drop-query',
      'target-percent-encode',
      'method',
      'timestamp-shift',
      'fixed-header',
    ]) {
      expect(kinds).toContain(`current:${kind}`);
    }
  });
});
