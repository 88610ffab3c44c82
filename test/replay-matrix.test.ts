import { EVENT_TABLE, type EventType } from '../src/model/event-table';
import type { DeliveryJob, EventJob, QuarantineJob } from '../src/model/jobs';
import { sampleBody } from '../src/signing/samples';
import { signLegacy } from '../src/signing/sign';
import { buildForwarding, waitUntil, type ForwardingHarness } from './support/forwarding-harness';
import { counterValue } from './support/metric-value';
import { FakePlatform } from './support/platform';
import { TargetServer } from './support/target-server';

/**
 * The replay matrix: a captured notification sent again with anything the signature does
 * not cover changed, on another notify path, or with its signature header written another way, is
 * answered 200 as a replay or refused with 401, and never becomes a second event or delivery.
 */

const platform = new FakePlatform();
const MERCHANT_ID = 'M-REPLAY-1';
const TYPE: EventType = 'payment.result';
const OTHER_PATHS = EVENT_TABLE.filter((e) => e.type !== TYPE).map((e) => e.path);

interface Sent {
  target: string;
  headers: Record<string, string>;
  body: Buffer;
}

interface Row {
  name: string;
  /** How the captured original differs from a plain signed notification (e.g. it carried X-Merch-Id). */
  original?: (s: Sent) => Sent;
  resend: (s: Sent) => Sent;
}

const withHeaders = (s: Sent, headers: Record<string, string>): Sent => ({
  ...s,
  headers: { ...s.headers, ...headers },
});
const withoutHeader = (s: Sent, name: string): Sent => ({
  ...s,
  headers: Object.fromEntries(Object.entries(s.headers).filter(([k]) => k !== name)),
});
const onPath = (s: Sent, path: string): Sent => ({ ...s, target: path });
const withMerchant = (id: string) => (s: Sent) => withHeaders(s, { 'x-merch-id': id });

/** The unsigned headers a replayer can change without touching the signed bytes. */
const UNSIGNED_HEADER_ROWS: Row[] = [
  { name: 'identical', resend: (s) => s },
  { name: 'X-Merch-Id added', resend: withMerchant('SUB-ADDED') },
  { name: 'X-Merch-Id changed', original: withMerchant('SUB-1'), resend: withMerchant('SUB-2') },
  { name: 'X-Merch-Id removed', original: withMerchant('SUB-1'), resend: (s) => withoutHeader(s, 'x-merch-id') },
  { name: 'X-Merch-Id empty', original: withMerchant('SUB-1'), resend: withMerchant('') },
  { name: 'User-Agent changed', resend: (s) => withHeaders(s, { 'user-agent': 'replayer/1.0' }) },
  {
    name: 'Content-Type with charset',
    resend: (s) => withHeaders(s, { 'content-type': 'application/json; charset=utf-8' }),
  },
  { name: 'Content-Type text/plain', resend: (s) => withHeaders(s, { 'content-type': 'text/plain' }) },
  {
    name: 'X-Forwarded-For and an unknown header added',
    resend: (s) => withHeaders(s, { 'x-forwarded-for': '203.0.113.9', 'x-anything': '1' }),
  },
  { name: 'query string added', resend: (s) => onPath(s, `${s.target}?again=1`) },
];

const CURRENT_ONLY_ROWS: Row[] = [
  { name: 'unsigned x-svc-appid added', resend: (s) => withHeaders(s, { 'x-svc-appid': 'other-app' }) },
  { name: 'x-svc-sign-alg removed', resend: (s) => withoutHeader(s, 'x-svc-sign-alg') },
];

const OTHER_PATH_ROWS: Row[] = OTHER_PATHS.flatMap((path) => [
  { name: `on ${path}`, resend: (s: Sent) => onPath(s, path) },
  {
    name: `on ${path} with X-Merch-Id changed`,
    original: withMerchant('SUB-1'),
    resend: (s: Sent) => withMerchant('SUB-9')(onPath(s, path)),
  },
]);

/** Ways to write the same signature bytes in the header (the signer sends URL-encoded Base64). */
const ENCODINGS: [string, (header: string) => string][] = [
  ['plain Base64', (v) => decodeURIComponent(v)],
  ['lower-case %2b %2f %3d', (v) => v.replace(/%2B/g, '%2b').replace(/%2F/g, '%2f').replace(/%3D/g, '%3d')],
  ['plain with only + as %2B', (v) => decodeURIComponent(v).replace(/\+/g, '%2B')],
  ['plain with only / as %2F', (v) => decodeURIComponent(v).replace(/\//g, '%2F')],
  ['plain with only = as %3D', (v) => decodeURIComponent(v).replace(/=/g, '%3D')],
  [
    'an ordinary character percent-escaped',
    (v) => v.replace(/[A-Za-z0-9]/, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
  ],
  ['every a escaped as %61', (v) => v.replace(/a/g, '%61')],
  ['padding dropped (non-canonical)', (v) => v.replace(/(%3D)+$/, '')],
  ['plain with padding dropped (non-canonical)', (v) => decodeURIComponent(v).replace(/=+$/, '')],
];

function encodingRows(signatureHeader: string): Row[] {
  const reencode = (s: Sent, encode: (v: string) => string) =>
    withHeaders(s, { [signatureHeader]: encode(s.headers[signatureHeader]!) });
  return ENCODINGS.flatMap(([name, encode], i) => [
    { name: `signature as ${name}`, resend: (s: Sent) => reencode(s, encode) },
    {
      name: `signature as ${name}, X-Merch-Id added`,
      resend: (s: Sent) => withMerchant('SUB-ENC')(reencode(s, encode)),
    },
    {
      name: `signature as ${name}, on ${OTHER_PATHS[i % OTHER_PATHS.length]}`,
      resend: (s: Sent) => onPath(reencode(s, encode), OTHER_PATHS[i % OTHER_PATHS.length]!),
    },
  ]);
}

interface Outcome {
  marker: string;
  firstStatus: number;
  status: number;
  countedAsReplay: boolean;
  /** Kept in quarantine for an operator as a re-typed legacy signature, not forwarded. */
  heldAsReused: boolean;
}

describe.each([
  [
    'current scheme (the same nonce)',
    'current',
    [...UNSIGNED_HEADER_ROWS, ...CURRENT_ONLY_ROWS, ...OTHER_PATH_ROWS, ...encodingRows('x-svc-sign')],
  ],
  [
    'legacy v1.2 scheme (the same signature)',
    'legacy',
    [...UNSIGNED_HEADER_ROWS, ...OTHER_PATH_ROWS, ...encodingRows('signature')],
  ],
] as const)('the replay matrix, %s', (_title, scheme, rows) => {
  let f: ForwardingHarness;
  let target: TargetServer;
  const outcomes = new Map<string, Outcome>();

  /** A fresh captured notification whose signature has a + and a / to re-encode. */
  function signed(): { sent: Sent; marker: string } {
    for (;;) {
      const n = signOnce();
      const header = decodeURIComponent(n.sent.headers[scheme === 'current' ? 'x-svc-sign' : 'signature']!);
      if (header.includes('+') && header.includes('/')) return n;
    }
  }

  function signOnce(): { sent: Sent; marker: string } {
    if (scheme === 'current') {
      const n = platform.signed(TYPE);
      return { sent: n, marker: requestIdOf(n.body) };
    }
    const timestamp = Date.now();
    const body = Buffer.from(sampleBody(TYPE, { timestamp }));
    const headers = {
      'content-type': 'application/json',
      ...signLegacy(platform.keys.privateKeyPem, MERCHANT_ID, timestamp, body),
    };
    return {
      sent: { target: EVENT_TABLE.find((e) => e.type === TYPE)!.path, headers, body },
      marker: requestIdOf(body),
    };
  }

  /** Replays counted, whichever path the resend took. */
  async function replays(): Promise<number> {
    const counts = await Promise.all(
      EVENT_TABLE.map((e) => counterValue(f.metrics.notifications, { event_type: e.type, outcome: 'replay' })),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /** Re-typed legacy copies held, whichever path the resend took. */
  async function heldAsReused(): Promise<number> {
    const counts = await Promise.all(
      EVENT_TABLE.map((e) =>
        counterValue(f.metrics.notifications, {
          event_type: e.type,
          outcome: 'quarantined',
          reason: 'signature_reused',
        }),
      ),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /**
   * Events queued (distinct event ids, in whichever job holds them: delivery, event or quarantine
   * job), and apart from them the copies held in quarantine as re-typed legacy signatures.
   */
  async function eventsCarrying(marker: string): Promise<{ events: number; held: number }> {
    const found = new Set<string>();
    const held = new Set<string>();
    for (const queue of f.pipeline.allQueues()) {
      const jobs = await queue.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed']);
      for (const j of jobs) {
        const data = j.data as EventJob | QuarantineJob | DeliveryJob;
        if (!data.rawBody.includes(marker)) continue;
        if ('reason' in data && data.reason === 'signature_reused') held.add(data.eventId);
        else found.add(`${queue.name === 'quarantine' ? 'q' : 'e'}:${data.eventId}`);
      }
    }
    return { events: found.size, held: held.size };
  }

  // Each row sends its own captured notification, then the resend; rows go one after the other (so
  // the replay counter tells each row's outcome) and the queues settle once for all of them.
  beforeAll(async () => {
    target = await TargetServer.start();
    f = buildForwarding(platform, [{ name: 'ledger', url: target.url }], {
      SIGNATURE_SCHEMES: 'current,legacy',
      MERCHANT_ID,
    });
    for (const row of rows) {
      const { sent, marker } = signed();
      const original = row.original ? row.original(sent) : sent;
      const first = await platform.send(f.receiver.app, original);
      const before = await replays();
      const heldBefore = await heldAsReused();
      const again = await platform.send(f.receiver.app, row.resend(original));
      outcomes.set(row.name, {
        marker,
        firstStatus: first.status,
        status: again.status,
        countedAsReplay: (await replays()) === before + 1,
        heldAsReused: (await heldAsReused()) === heldBefore + 1,
      });
    }
    // Every event fanned out and every delivery finished: nothing more can reach the target
    // (quarantined notifications wait for an operator, never for a worker).
    const queues = [...f.pipeline.eventQueues(), ...f.pipeline.deliveryQueues().map(([, q]) => q)];
    await waitUntil(
      async () =>
        (
          await Promise.all(queues.map((q) => q.getJobCountByTypes('waiting', 'active', 'delayed', 'prioritized')))
        ).every((n) => n === 0),
      20000,
      'queues settled',
    );
  }, 60000);
  afterAll(async () => {
    await f.close();
    await target.close();
  });

  it.each(rows.map((r) => [r.name] as const))(
    '%s: answered 200 as a replay, 200 held for an operator (legacy on another path) or 401; one event, one delivery',
    async (name) => {
      const outcome = outcomes.get(name)!;
      const answered =
        outcome.status !== 200
          ? String(outcome.status)
          : outcome.countedAsReplay
            ? '200 replay'
            : outcome.heldAsReused
              ? '200 held'
              : '200 neither a replay nor held';
      const { events, held } = await eventsCarrying(outcome.marker);
      const seen = {
        original: outcome.firstStatus,
        answered,
        events,
        held,
        deliveries: target.requests.filter((r) => r.body.includes(outcome.marker)).length,
      };
      // A re-typed legacy signature is held (one copy, in quarantine) only under the legacy scheme.
      const expectHeld = scheme === 'legacy' && answered === '200 held' ? 1 : 0;
      expect(seen).toEqual({
        original: 200,
        answered: expect.stringMatching(scheme === 'legacy' ? /^(200 replay|200 held|401)$/ : /^(200 replay|401)$/),
        events: 1,
        held: expectHeld,
        deliveries: 1,
      });
    },
  );
});

function requestIdOf(body: Buffer): string {
  const parsed = JSON.parse(body.toString('utf8')) as { data: { request_id: string } };
  return parsed.data.request_id;
}
