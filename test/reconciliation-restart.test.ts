import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateTestKeyPair } from '../src/signing/keypair';
import { waitUntil } from './support/forwarding-harness';
import { testRedisUrl, uniquePrefix } from './support/harness';
import { FakePlatform } from './support/platform';
import { ServiceProcess } from './support/service-process';
import { environmentsAsking, StandInPlatform } from './support/stand-in-platform';
import { tempDir } from './support/temp-dir';

jest.setTimeout(180000);

const ADMIN_TOKEN = 'restart-admin-token-0123456789';
const platform = new FakePlatform();
const merchant = generateTestKeyPair();
const EXPECTED = 24;
let standIn: StandInPlatform;
let service: ServiceProcess | undefined;

afterAll(async () => {
  await service?.kill('SIGKILL');
  await standIn?.close();
});

interface Listed {
  requestId: string;
  state: string;
  attempts: number;
}

it('SIGKILLed while expectations are open, restarted: none is lost, none is asked twice for the same due time', async () => {
  standIn = await StandInPlatform.start(platform.keys, merchant.publicKeyPem);
  // Slow answers, so that kills land while inquiries are in flight.
  standIn.delayMs = 150;
  const config = path.join(tempDir('reconciliation-restart'), 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      environments: environmentsAsking(standIn),
      expectations: { pollIntervalMs: 100, claimLeaseMs: 1500, retryInitialMs: 200, retryMaxMs: 400 },
    }),
  );
  const env = {
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix(),
    CONFIG_FILE: config,
    ADMIN_TOKEN,
    TEST_MERCHANT_KEY: merchant.privateKeyPem,
  };
  const admin = (s: ServiceProcess, p: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${s.adminPort}/admin/api/expectations${p}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  service = await ServiceProcess.startQuiet(env);
  await service.waitForReady();
  // Due over the next few seconds: some before the first kill, some between kills, some after.
  for (let i = 0; i < EXPECTED; i++) {
    const res = await admin(service, '', {
      eventType: 'payment.result',
      requestId: `PAY-R${i}`,
      dueInSeconds: i % 4,
    });
    expect(res.status).toBe(201);
  }
  for (let kill = 0; kill < 2; kill++) {
    const asked = standIn.inquiries.length;
    // Killed as soon as inquiries are under way (an answer takes 150 ms: some are in flight).
    await waitUntil(() => standIn.inquiries.length > asked, 15000, 'an inquiry');
    expect(await service.kill('SIGKILL')).toBe('SIGKILL');
    service = await ServiceProcess.startQuiet(env);
    await service.waitForReady();
  }

  const s = service;
  let listed: Listed[] = [];
  await waitUntil(
    async () => {
      const res = await admin(s, '?limit=1000');
      // A process just started may answer 500 until its Redis connection is up.
      if (res.status !== 200) return false;
      listed = ((await res.json()) as { expectations: Listed[] }).expectations;
      return listed.length === EXPECTED && listed.every((e) => e.state === 'missing_notification');
    },
    60000,
    'every expectation settled',
  );

  // None lost: every one is there, settled from a believed answer.
  expect(listed.map((e) => e.requestId).sort()).toEqual(Array.from({ length: EXPECTED }, (_, i) => `PAY-R${i}`).sort());
  // None asked twice for the same due time: each (request_id, attempt) reached the platform once at most.
  const pairs = standIn.inquiries.map((q) => `${String(q.json.request_id)}#${String(q.json.attempt)}`);
  // More inquiries than expectations: a kill cut some in flight, and their next attempt asked again.
  expect(pairs.length).toBeGreaterThan(EXPECTED);
  expect(new Set(pairs).size).toBe(pairs.length);
  expect(standIn.inquiries.every((q) => q.signatureVerified)).toBe(true);
});
