import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { stringify } from 'yaml';
import { wireAdmin } from '../src/admin/wiring';
import { runCli } from '../src/cli/run';
import { loadConfigDetailed } from '../src/config/load';
import { eventDefinition } from '../src/model/event-table';
import { startWorkers, type RunningWorkers } from '../src/forwarding/workers';
import { createLogger } from '../src/logging/logger';
import { eventIdFor } from '../src/model/ids';
import { generateTestKeyPair } from '../src/signing/keypair';
import { randomNonce, signCurrent, signLegacy } from '../src/signing/sign';
import { ADMIN_TEST_TOKEN, waitUntil } from './support/forwarding-harness';
import { buildHarness, LogCapture, type Harness } from './support/harness';
import { counterValue } from './support/metric-value';
import { postRaw } from './support/post-raw';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

const production = generateTestKeyPair();
const sandbox = generateTestKeyPair();
const MERCHANT = 'M100023';
const auth = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };

type Sent = { target: string; headers: Record<string, string>; body: Buffer };

/** A current-scheme notification signed with one environment's key. */
function signed(
  key: string,
  type: Parameters<typeof eventDefinition>[0],
  body: string,
  extra: Record<string, string> = {},
): Sent {
  const target = eventDefinition(type).path;
  const bytes = Buffer.from(body);
  return {
    target,
    body: bytes,
    headers: {
      'content-type': 'application/json',
      ...signCurrent({ privateKey: key, target, body: bytes, nonce: randomNonce() }),
      ...extra,
    },
  };
}

/** A receiver, in-process workers and the admin app over the configuration file `settings` (plus targets). */
class Service {
  readonly h: Harness;
  readonly workers: RunningWorkers;
  readonly admin: ReturnType<typeof wireAdmin>;
  readonly adminLogs = new LogCapture();
  readonly configFile: string;

  constructor(settings: Record<string, unknown>, env: Record<string, string> = {}) {
    this.configFile = path.join(tempDir('environments'), 'config.yaml');
    writeFileSync(this.configFile, stringify(settings));
    this.h = buildHarness({ CONFIG_FILE: this.configFile, ADMIN_TOKEN: ADMIN_TEST_TOKEN, ...env });
    this.workers = startWorkers(
      this.h.config,
      this.h.pipeline,
      createLogger('error'),
      this.h.metrics,
      this.h.connector,
    );
    this.admin = wireAdmin(
      this.h.config,
      this.h.pipeline,
      this.h.metrics.registry,
      createLogger('info', this.adminLogs.stream),
    );
  }

  send(n: Sent) {
    return postRaw(this.h.app, n.target, n.headers, n.body);
  }

  cliEnv(): Record<string, string> {
    return { CONFIG_FILE: this.configFile, REDIS_URL: this.h.config.redisUrl, QUEUE_PREFIX: this.h.config.queuePrefix };
  }

  async quarantined(): Promise<
    { id: string; eventId: string; eventType: string; environment?: string; reason: string; errors: string[] }[]
  > {
    return (await request(this.admin).get('/admin/api/quarantine').set(auth).expect(200)).body.quarantined;
  }

  async close(): Promise<void> {
    await this.workers.close();
    await this.h.close();
  }
}

const quick = { timeoutMs: 2000, maxAttempts: 2, backoff: { initialMs: 50, maxMs: 200 } };
const payment = (requestId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    type: 'MERCH',
    data: { request_id: requestId, merchant_no: MERCHANT, status: 'SUCCESS', amount: '100.00', ...extra },
  });

describe('platform environments', () => {
  let prodErp: TargetServer;
  let sandboxErp: TargetServer;
  let s: Service;

  beforeAll(async () => {
    prodErp = await TargetServer.start();
    sandboxErp = await TargetServer.start();
    s = new Service({
      environments: {
        production: { publicKeys: [production.publicKeyBase64] },
        sandbox: { publicKeys: [sandbox.publicKeyBase64] },
      },
      targets: [
        { name: 'ledger', url: prodErp.url, events: ['payment.result'], environments: ['production'], ...quick },
        {
          name: 'sandbox-ledger',
          url: sandboxErp.url,
          events: ['payment.result'],
          environments: ['sandbox'],
          ...quick,
        },
        { name: 'fx-desk', url: prodErp.url, events: ['fx.result'], environments: ['production'], ...quick },
      ],
    });
  });
  afterAll(async () => {
    await s.close();
    await Promise.all([prodErp.close(), sandboxErp.close()]);
  });

  it('when the sandbox signs a payment result, then only the sandbox target gets it, marked sandbox, and the event view says sandbox', async () => {
    const n = signed(sandbox.privateKeyPem, 'payment.result', payment('ENV-SANDBOX-1'));
    await s.send(n).expect(200);
    const id = eventIdFor('payment.result', 'sandbox', n.body);
    await sandboxErp.waitFor(() => sandboxErp.successes().some((r) => r.headers['webhook-id'] === id));

    const forwarded = sandboxErp.successes().find((r) => r.headers['webhook-id'] === id)!;
    expect(forwarded.headers['x-webhook-environment']).toBe('sandbox');
    expect(JSON.parse(forwarded.body.toString('utf8'))).toMatchObject({
      id,
      type: 'payment.result',
      environment: 'sandbox',
    });
    const view = (await request(s.admin).get(`/admin/api/events/${id}`).set(auth).expect(200)).body;
    expect(view.environment).toBe('sandbox');
    expect(view.deliveries.map((d: { target: string }) => d.target)).toEqual(['sandbox-ledger']);
    // The production target never saw it: not delivered, not queued.
    expect(prodErp.requests.some((r) => r.headers['webhook-id'] === id)).toBe(false);
    expect(await s.h.pipeline.deliveryQueue('ledger')!.getJob(id)).toBeUndefined();
    expect(
      await counterValue(s.h.metrics.notifications, {
        event_type: 'payment.result',
        outcome: 'accepted',
        environment: 'sandbox',
      }),
    ).toBe(1);
    expect(s.h.logs.find((l) => l.message === 'notification received' && l.eventId === id)?.environment).toBe(
      'sandbox',
    );
  });

  it('when production signs a payment result, then only the production target gets it, marked production', async () => {
    const n = signed(production.privateKeyPem, 'payment.result', payment('ENV-PROD-1'));
    await s.send(n).expect(200);
    const id = eventIdFor('payment.result', 'production', n.body);
    await prodErp.waitFor(() => prodErp.successes().some((r) => r.headers['webhook-id'] === id));

    const forwarded = prodErp.successes().find((r) => r.headers['webhook-id'] === id)!;
    expect(forwarded.headers['x-webhook-environment']).toBe('production');
    expect(JSON.parse(forwarded.body.toString('utf8')).environment).toBe('production');
    expect(await s.h.pipeline.deliveryQueue('sandbox-ledger')!.getJob(id)).toBeUndefined();
    expect((await request(s.admin).get(`/admin/api/events/${id}`).set(auth).expect(200)).body.environment).toBe(
      'production',
    );
  });

  it('when the same body arrives from both environments, then they are two events, never one standing for the other', () => {
    const body = Buffer.from(payment('ENV-SAME'));
    expect(eventIdFor('payment.result', 'sandbox', body)).not.toBe(eventIdFor('payment.result', 'production', body));
  });

  it('when a body is re-sent with a new nonce and another X-Merch-Id, then it stays one event with one delivery per target, counted as a conflict', async () => {
    const body = payment('ENV-CONFLICT-1');
    const first = signed(production.privateKeyPem, 'payment.result', body, { 'x-merch-id': 'SUB-42' });
    const copy = signed(production.privateKeyPem, 'payment.result', body, { 'x-merch-id': 'SUB-7' });
    const conflictsBefore = await counterValue(s.h.metrics.notifications, {
      event_type: 'payment.result',
      outcome: 'conflict',
      environment: 'production',
    });
    await s.send(first).expect(200);
    await s.send(copy).expect(200);
    const id = eventIdFor('payment.result', 'production', first.body);
    await prodErp.waitFor(() => prodErp.successes().some((r) => r.headers['webhook-id'] === id));
    await new Promise((r) => setTimeout(r, 300)); // time for a second delivery, were there one

    const deliveries = prodErp.requests.filter((r) => r.headers['webhook-id'] === id);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.headers['x-merch-id']).toBe('SUB-42');
    expect(
      await counterValue(s.h.metrics.notifications, {
        event_type: 'payment.result',
        outcome: 'conflict',
        environment: 'production',
      }),
    ).toBe(conflictsBefore + 1);
    const warning = s.h.logs.find((l) => l.level === 'warn' && l.outcome === 'conflict' && l.eventId === id);
    expect(warning).toMatchObject({ merchantId: 'SUB-7', firstMerchantId: 'SUB-42' });
  });

  it('when a copy comes again with the same X-Merch-Id, then it is a duplicate as before', async () => {
    const body = payment('ENV-DUP-1');
    await s.send(signed(production.privateKeyPem, 'payment.result', body, { 'x-merch-id': 'SUB-42' })).expect(200);
    const before = await counterValue(s.h.metrics.notifications, {
      event_type: 'payment.result',
      outcome: 'duplicate',
      environment: 'production',
    });
    await s.send(signed(production.privateKeyPem, 'payment.result', body, { 'x-merch-id': 'SUB-42' })).expect(200);
    expect(
      await counterValue(s.h.metrics.notifications, {
        event_type: 'payment.result',
        outcome: 'duplicate',
        environment: 'production',
      }),
    ).toBe(before + 1);
  });

  it('when no target takes a sandbox event, then it is forwarded nowhere, kept and counted like an unrouted event', async () => {
    const n = signed(
      sandbox.privateKeyPem,
      'fx.result',
      JSON.stringify({ type: 'FX', data: { request_id: 'ENV-FX-SANDBOX' } }),
    );
    await s.send(n).expect(200);
    const id = eventIdFor('fx.result', 'sandbox', n.body);
    await waitUntil(
      async () => (await s.h.pipeline.eventQueue('fx.result').getJob(id))?.failedReason !== undefined,
      10_000,
      'the event kept as failed',
    );
    const job = await s.h.pipeline.eventQueue('fx.result').getJob(id);
    expect(job!.failedReason).toMatch(/no target subscribed to fx\.result takes the sandbox environment/);
    expect(await counterValue(s.h.metrics.unrouted, { event_type: 'fx.result' })).toBe(1);
    expect(prodErp.requests.some((r) => r.headers['webhook-id'] === id)).toBe(false);
  });

  it('when a key signed neither environment, then it is refused as before', async () => {
    const stranger = generateTestKeyPair();
    await s.send(signed(stranger.privateKeyPem, 'payment.result', payment('ENV-STRANGER'))).expect(401);
  });
});

describe('acceptance rules', () => {
  let erp: TargetServer;
  let s: Service;

  beforeAll(async () => {
    erp = await TargetServer.start();
    s = new Service({
      environments: {
        production: {
          publicKeys: [production.publicKeyBase64],
          accept: { 'data.merchant_no': { $in: [MERCHANT, 'M100024'] } },
        },
      },
      targets: [{ name: 'ledger', url: erp.url, events: ['*'], ...quick }],
    });
  });
  afterAll(async () => {
    await s.close();
    await erp.close();
  });

  it('when a verified notification names another merchant, then it is answered 200, delivered nowhere and quarantined as not_accepted', async () => {
    const n = signed(production.privateKeyPem, 'payment.result', payment('ACCEPT-OTHER-1', { merchant_no: 'M999999' }));
    const res = await s.send(n).expect(200);
    expect(res.body.ret_code).toBe('000000');
    const id = eventIdFor('payment.result', 'production', n.body);

    const kept = (await s.quarantined()).find((q) => q.eventId === id);
    expect(kept).toMatchObject({ eventType: 'payment.result', environment: 'production', reason: 'not_accepted' });
    expect(await s.h.pipeline.deliveryQueue('ledger')!.getJob(id)).toBeUndefined();
    expect(
      await counterValue(s.h.metrics.notifications, {
        event_type: 'payment.result',
        outcome: 'not_accepted',
        environment: 'production',
      }),
    ).toBe(1);
    expect(s.h.logs.find((l) => l.level === 'warn' && l.outcome === 'not_accepted' && l.eventId === id)).toBeDefined();

    // Its own merchant's notification goes through.
    const own = signed(production.privateKeyPem, 'payment.result', payment('ACCEPT-OWN-1'));
    await s.send(own).expect(200);
    const ownId = eventIdFor('payment.result', 'production', own.body);
    await erp.waitFor(() => erp.successes().some((r) => r.headers['webhook-id'] === ownId));
    expect(erp.requests.some((r) => r.headers['webhook-id'] === id)).toBe(false);
  });
});

describe('environment source addresses', () => {
  let s: Service;
  beforeAll(() => {
    s = new Service(
      {
        environments: {
          production: { publicKeys: [production.publicKeyBase64] },
          sandbox: { publicKeys: [sandbox.publicKeyBase64], sourceCidrs: ['203.0.113.0/24'] },
        },
      },
      { ROLE: 'receiver' },
    );
  });
  afterAll(() => s.close());

  it('when a sandbox notification comes from outside its sourceCidrs, then it is refused 403 with the reason; production from the same address passes', async () => {
    const res = await s.send(signed(sandbox.privateKeyPem, 'payment.result', payment('SOURCE-1'))).expect(403);
    expect(res.body.ret_code).toBeDefined();
    expect(s.h.logs.find((l) => l.reason === 'source_not_allowed')).toBeDefined();
    await s.send(signed(production.privateKeyPem, 'payment.result', payment('SOURCE-2'))).expect(200);
  });
});

describe('a legacy signature re-typed on another notify path', () => {
  let s: Service;
  beforeAll(() => {
    s = new Service(
      { environments: { production: { publicKeys: [production.publicKeyBase64], merchantId: MERCHANT } } },
      { SIGNATURE_SCHEMES: 'current,legacy', ROLE: 'receiver' },
    );
  });
  afterAll(() => s.close());

  function legacy(type: 'payment.result' | 'fx.result', body: Buffer, timestamp: number): Sent {
    return {
      target: eventDefinition(type).path,
      body,
      headers: {
        'content-type': 'application/json',
        ...signLegacy(production.privateKeyPem, MERCHANT, timestamp, body),
      },
    };
  }

  it('when a captured copy is sent to another path first, then the genuine one is answered 200 and quarantined as signature_reused, naming both types', async () => {
    const timestamp = Date.now();
    const body = Buffer.from(
      JSON.stringify({ timestamp, type: 'MERCH', data: { request_id: 'LEGACY-RETYPE-1', status: 'SUCCESS' } }),
    );
    const genuine = legacy('payment.result', body, timestamp);
    const captured = { ...genuine, target: eventDefinition('fx.result').path };

    await s.send(captured).expect(200);
    const res = await s.send(genuine).expect(200);
    expect(res.body.ret_code).toBe('000000');

    const kept = (await s.quarantined()).filter((q) => q.reason === 'signature_reused');
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({
      eventType: 'payment.result',
      environment: 'production',
      eventId: eventIdFor('payment.result', 'production', body),
    });
    expect(kept[0]!.errors.join(' ')).toMatch(/fx\.result.*payment\.result/);
    expect(s.h.logs.find((l) => l.level === 'warn' && l.reason === 'signature_reused')).toBeDefined();
    expect(
      await counterValue(s.h.metrics.notifications, {
        event_type: 'payment.result',
        outcome: 'quarantined',
        reason: 'signature_reused',
      }),
    ).toBe(1);

    // The platform's retry of the genuine one is answered 200 again and kept once.
    await s.send(genuine).expect(200);
    expect((await s.quarantined()).filter((q) => q.reason === 'signature_reused')).toHaveLength(1);
  });
});

describe('operator corrections', () => {
  const corrected = JSON.stringify({ type: 'MERCH', data: { request_id: 'CORRECT-1', status: 'SUCCESS' } });
  const invalid = '{"type": "MERCH", "data": '; // verified, but not JSON: quarantined

  async function quarantineOne(s: Service): Promise<{ id: string; original: Buffer }> {
    const n = signed(production.privateKeyPem, 'payment.result', invalid);
    await s.send(n).expect(200);
    const [item] = await s.quarantined();
    return { id: item!.id, original: n.body };
  }

  describe('off (the default)', () => {
    let s: Service;
    beforeAll(() => {
      s = new Service(
        { environments: { production: { publicKeys: [production.publicKeyBase64] } } },
        { ROLE: 'receiver' },
      );
    });
    afterAll(() => s.close());

    it('when an operator replays with a corrected body, then the API answers 403 corrections_disabled and the CLI refuses; the notification stays', async () => {
      const { id } = await quarantineOne(s);
      const res = await request(s.admin)
        .post('/admin/api/quarantine/replay')
        .set(auth)
        .send({ ids: [id], body: corrected })
        .expect(403);
      expect(res.body.error).toBe('corrections_disabled');
      const file = path.join(tempDir('correction'), 'body.json');
      writeFileSync(file, corrected);
      await expect(
        runCli(['quarantine', 'replay', id, '--body', file], { env: s.cliEnv(), out: () => undefined }),
      ).rejects.toThrow(/corrected body is turned off/);
      expect((await s.quarantined()).map((q) => q.id)).toEqual([id]);
      expect(s.adminLogs.find((l) => l.action === 'quarantine.replay' && typeof l.refused === 'string')).toBeDefined();
    });
  });

  describe('on', () => {
    let erp: TargetServer;
    let passthrough: TargetServer;
    let s: Service;
    beforeAll(async () => {
      erp = await TargetServer.start();
      passthrough = await TargetServer.start();
      s = new Service(
        {
          environments: { production: { publicKeys: [production.publicKeyBase64] } },
          targets: [
            { name: 'ledger', url: erp.url, events: ['*'], ...quick },
            { name: 'raw', url: passthrough.url, events: ['*'], format: 'passthrough', ...quick },
          ],
        },
        { ADMIN_ALLOW_CORRECTIONS: 'true' },
      );
    });
    afterAll(async () => {
      await s.close();
      await Promise.all([erp.close(), passthrough.close()]);
    });

    it('when an operator replays with a corrected body, then the audit line has both hashes and every forwarded request says corrected', async () => {
      const { id, original } = await quarantineOne(s);
      const res = await request(s.admin)
        .post('/admin/api/quarantine/replay')
        .set(auth)
        .send({ ids: [id], body: corrected })
        .expect(200);
      const [result] = res.body.results;
      expect(result.outcome).toBe('queued');

      const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
      const audit = s.adminLogs.find((l) => l.action === 'quarantine.replay');
      expect(audit).toMatchObject({ corrected: true, originalSha256: sha(original), correctedSha256: sha(corrected) });

      await erp.waitFor(() => erp.successes().some((r) => r.headers['webhook-id'] === result.eventId));
      await passthrough.waitFor(() => passthrough.successes().some((r) => r.headers['webhook-id'] === result.eventId));
      const standard = erp.successes().find((r) => r.headers['webhook-id'] === result.eventId)!;
      expect(standard.headers['x-webhook-corrected']).toBe('true');
      expect(JSON.parse(standard.body.toString('utf8'))).toMatchObject({ corrected: true, environment: 'production' });
      const raw = passthrough.successes().find((r) => r.headers['webhook-id'] === result.eventId)!;
      expect(raw.headers['x-webhook-corrected']).toBe('true');
      expect(raw.headers['x-svc-sign']).toBeUndefined();
      expect(raw.body.toString('utf8')).toBe(corrected);
    });

    it('when a corrected body comes with two ids, then the API answers 400 and the CLI refuses, naming the rule; nothing is replayed', async () => {
      const { id } = await quarantineOne(s);
      const ids = [id, `${id}-another`];
      const rule = 'a corrected body replays exactly one quarantined notification';
      const res = await request(s.admin)
        .post('/admin/api/quarantine/replay')
        .set(auth)
        .send({ ids, body: corrected })
        .expect(400);
      expect(res.body).toEqual({ error: 'bad_request', message: rule });
      const file = path.join(tempDir('correction'), 'body.json');
      writeFileSync(file, corrected);
      const failed = runCli(['quarantine', 'replay', ...ids, '--body', file], {
        env: { ...s.cliEnv(), ADMIN_ALLOW_CORRECTIONS: 'true' },
        out: () => undefined,
      });
      await expect(failed).rejects.toThrow(rule);
      expect((await s.quarantined()).map((q) => q.id)).toContain(id);
    });
  });
});

describe('configuration of environments', () => {
  it('refuses a key listed for two environments, naming both', async () => {
    const { loadEnvironments } = await import('../src/config/keys');
    const config = {
      platformPublicKeys: [],
      environments: {
        production: { publicKeys: [production.publicKeyBase64] },
        sandbox: { publicKeys: [production.publicKeyBase64] },
      },
    };
    expect(() => loadEnvironments(config)).toThrow(/same key is listed for environment production/);
  });

  const load = (settings: Record<string, unknown>, env: Record<string, string> = {}) => {
    const file = path.join(tempDir('environments-config'), 'config.yaml');
    writeFileSync(file, stringify(settings));
    return loadConfigDetailed({ CONFIG_FILE: file, ...env });
  };
  const two = {
    production: { publicKeys: [production.publicKeyBase64] },
    sandbox: { publicKeys: [sandbox.publicKeyBase64] },
  };

  it('with several environments, a target that names none takes production only, and loading says which targets those are', () => {
    const loaded = load({
      environments: two,
      targets: [
        { name: 'erp', url: 'http://127.0.0.1:9/x', events: ['*'] },
        { name: 'sb', url: 'http://127.0.0.1:9/y', events: ['*'], environments: ['sandbox'] },
      ],
    });
    expect(loaded.config.targets.map((t) => t.environments)).toEqual([['production'], ['sandbox']]);
    expect(loaded.warnings.join('\n')).toMatch(/targets erp name no environments/);
  });

  it('with one environment, a target that names none takes it, whatever its name', () => {
    const loaded = load({
      environments: { eu: two.production },
      targets: [{ name: 'erp', url: 'http://127.0.0.1:9/x', events: ['*'] }],
    });
    expect(loaded.config.targets[0]!.environments).toEqual(['eu']);
    expect(loaded.warnings).toEqual([]);
  });

  it('refuses a target naming an unknown environment, flat keys beside environments, and an accept rule with an unknown operator', () => {
    expect(() =>
      load({
        environments: two,
        targets: [{ name: 'erp', url: 'http://127.0.0.1:9/x', events: ['*'], environments: ['staging'] }],
      }),
    ).toThrow(/no environment named "staging"/);
    expect(() => load({ environments: two }, { PLATFORM_PUBLIC_KEYS: production.publicKeyBase64 })).toThrow(
      /shorthand for one environment named production/,
    );
    expect(() =>
      load({ environments: { production: { ...two.production, accept: { 'data.merchant_no': { $inn: ['M1'] } } } } }),
    ).toThrow(/environment "production".*\$inn/);
  });
});
