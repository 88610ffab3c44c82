import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import path from 'node:path';
import { keygen, KEY_FILES } from '../cli/commands/keygen';
import { sendNotification, type SendOptions } from '../cli/commands/send';
import { projectRoot } from '../config/project-root';
import { EVENT_TYPES } from '../events/table';
import { freePort, isPortFree, isRedisReachable, RedisServer } from '../devtools/redis-server';
import { stopChild } from '../devtools/stop-child';
import { keyPrefix } from '../pipeline/names';
import { resetPrefix } from './local-redis';

const DEMO_PREFIX = 'demo';
import { startMerchantSystem } from './merchant-system';

/**
 * The quick-start demo: a Redis (the reachable one, or a throwaway local one), a fresh test key pair,
 * the service, then one signed sample notification of each type, a replay and a legacy-scheme one.
 * The service keeps running until Ctrl-C (or exits at once with DEMO_EXIT=1).
 */
async function main(): Promise<void> {
  const say = (line: string) => process.stdout.write(`[demo] ${line}\n`);
  const root = projectRoot();
  // Stopped in order: the service first (it drains), then the Redis the demo started, if any.
  const stoppers: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stoppers) await stop();
  };
  process.on('SIGINT', () => {
    void stopAll().then(() => process.exit(0));
  });

  let redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  if (await isRedisReachable(redisUrl)) {
    const removed = await resetPrefix(redisUrl, keyPrefix(DEMO_PREFIX));
    say(`using the Redis at ${redisUrl}; the demo's queues live under the prefix "${DEMO_PREFIX}" (reset: ${removed} old keys removed)`);
  } else {
    const local = await RedisServer.start();
    stoppers.push(() => local.stop());
    say(`no Redis reachable at ${redisUrl}: started a throwaway redis-server at ${local.url} (nothing is kept)`);
    redisUrl = local.url;
  }

  const keyDir = path.join(root, '.demo', 'keys');
  mkdirSync(keyDir, { recursive: true });
  keygen(keyDir, (l) => say(l));

  let port = Number(process.env.PORT ?? 8080);
  if (!(await isPortFree(port))) {
    const busy = port;
    port = await freePort();
    say(`port ${busy} is taken: the service listens on ${port} instead`);
  }
  const merchantId = 'M100023';
  const merchantSystem = await startMerchantSystem(say);
  const adminPort = (await isPortFree(9090)) ? 9090 : await freePort();
  const adminToken = randomBytes(18).toString('base64url');
  const configFile = path.join(root, '.demo', 'config.yaml');
  writeFileSync(
    configFile,
    stringify({ targets: [{ name: 'merchant-system', url: merchantSystem.url, events: ['*'], secret: `whsec_${randomBytes(24).toString('base64')}` }] }),
  );
  const service = spawn(process.execPath, [path.join(root, 'dist', 'src', 'main.js')], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      PORT: String(port),
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: DEMO_PREFIX,
      PLATFORM_PUBLIC_KEYS: `file:${path.join(keyDir, KEY_FILES.publicKeyBase64)}`,
      SIGNATURE_SCHEMES: 'current,legacy',
      MERCHANT_ID: merchantId,
      CONFIG_FILE: configFile,
      ADMIN_PORT: String(adminPort),
      ADMIN_TOKEN: adminToken,
      ADMIN_USER: 'admin',
      ADMIN_PASSWORD: adminToken,
    },
  });
  stoppers.unshift(() => stopChild(service));
  service.on('exit', (code) => {
    if (code !== 0 && code !== null) say(`the service exited with code ${code}`);
  });

  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url);
  say(`service is up at ${url}; sending signed sample notifications:`);

  const base: SendOptions = {
    url,
    keyFile: path.join(keyDir, KEY_FILES.privateKey),
    scheme: 'current',
    headerPrefix: 'x-svc',
    basePath: '',
    times: 1,
  };
  const rows: string[] = [];
  for (const type of EVENT_TYPES) {
    for (const r of await sendNotification(type, base)) rows.push(`${type.padEnd(28)} current  ${r.status} ${r.body}`);
  }
  const replay = await sendNotification('payment.result', { ...base, times: 2 });
  rows.push(`${'payment.result (sent twice)'.padEnd(28)} current  ${replay.map((r) => r.status).join(', ')}: the second is a replay, queued once`);
  for (const r of await sendNotification('remittance.incoming', { ...base, scheme: 'legacy', merchantId })) {
    rows.push(`${'remittance.incoming'.padEnd(28)} v1.2     ${r.status} ${r.body}`);
  }
  process.stdout.write(`\n${rows.join('\n')}\n\n`);
  const expected = EVENT_TYPES.length + 2;
  for (let i = 0; i < 100 && merchantSystem.received() < expected; i++) await new Promise((r) => setTimeout(r, 100));
  say(`the merchant system received ${merchantSystem.received()} events for ${expected + 1} notifications sent (the replay was queued once)`);
  const admin = `http://127.0.0.1:${adminPort}`;
  say(`dashboard: ${admin}/admin/queues  (user admin, password ${adminToken})`);
  say(`metrics:   curl -H "Authorization: Bearer ${adminToken}" ${admin}/metrics`);
  say(`queues:    curl -H "Authorization: Bearer ${adminToken}" ${admin}/admin/api/queues`);

  if (process.env.DEMO_EXIT === '1') {
    await stopAll();
    merchantSystem.server.close();
    return;
  }
  say(`the service keeps running at ${url}. Send more with:`);
  say(`  npm run cli -- send payment.result --url ${url} --key ${path.relative(process.cwd(), base.keyFile)}`);
  say('Ctrl-C stops it.');
}

async function waitForHealth(url: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the service did not answer ${url}/healthz`);
}

main().catch((err: Error) => {
  process.stderr.write(`[demo] failed: ${err.message}\n`);
  process.exit(1);
});
