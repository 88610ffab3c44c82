import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { FakePlatform } from './support/platform';
import { PostgresServer } from './support/postgres';
import { ServiceProcess } from './support/service-process';
import { testRedisUrl, uniquePrefix } from './support/harness';
import { tempDir } from './support/temp-dir';
import { notificationCount, queryArchive, waitForCount } from './support/archive';
import { Redis } from 'ioredis';

/**
 * Never on the answer's path, never lost: while PostgreSQL is stopped (a crash, `immediate`) for 30 s
 * and the archiver is SIGKILLed once, every notification is answered 200, and afterwards each one is
 * archived exactly once. Receivers and the archiving worker run as separate processes, as in
 * production, so killing the archiver does not touch the receiver.
 */

const TOTAL = 200;
const OUTAGE_MS = 30_000;
const platform = new FakePlatform();

let pg: PostgresServer;
const processes: ServiceProcess[] = [];
const redis = new Redis(testRedisUrl());

afterAll(async () => {
  redis.disconnect();
  for (const p of processes) await p.kill('SIGKILL');
  await pg?.stop('immediate').catch(() => undefined);
  await pg?.remove();
});

async function send(port: number): Promise<{ status: number; nonce: string }> {
  const n = platform.signed('payment.result');
  const res = await fetch(`http://127.0.0.1:${port}${n.target}`, { method: 'POST', headers: n.headers, body: n.body });
  await res.arrayBuffer();
  return { status: res.status, nonce: n.headers['x-svc-nonce']! };
}

it('with PostgreSQL down for 30 s and the archiver SIGKILLed once, all 200 are answered 200 and archived exactly once', async () => {
  pg = await PostgresServer.start();
  const url = pg.url();
  const configFile = path.join(tempDir('archive-outage'), 'config.json');
  writeFileSync(configFile, JSON.stringify({ archive: { claimIdleMs: 1000, batchSize: 50 } }));
  const prefix = uniquePrefix();
  const env = {
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: prefix,
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    ARCHIVE_URL: url,
    CONFIG_FILE: configFile,
  };
  const receiver = await ServiceProcess.startQuiet({ ...env, ROLE: 'receiver' });
  processes.push(receiver);
  let worker = await ServiceProcess.startQuiet({ ...env, ROLE: 'worker' });
  processes.push(worker);

  const answers: { status: number; nonce: string }[] = [];
  for (let i = 0; i < 40; i++) answers.push(await send(receiver.port));

  await pg.stop('immediate');
  const outageEnds = Date.now() + OUTAGE_MS;
  const duringOutage = 120;
  for (let i = 0; i < duringOutage; i++) {
    answers.push(await send(receiver.port));
    if (i === 40) {
      // The archiver holds entries it read but could not write: killed, they wait for the next one.
      const [pending] = (await redis.xpending(`{${prefix}}:archive`, 'archiver')) as [number];
      expect(pending).toBeGreaterThan(0);
      await worker.kill('SIGKILL');
      worker = await ServiceProcess.startQuiet({ ...env, ROLE: 'worker' });
      processes.push(worker);
    }
    await new Promise((r) => setTimeout(r, Math.max(0, (outageEnds - Date.now()) / (duringOutage - i))));
  }
  await pg.start();
  while (answers.length < TOTAL) answers.push(await send(receiver.port));

  expect(answers.filter((a) => a.status !== 200)).toEqual([]);
  expect(await waitForCount(() => notificationCount(url), TOTAL, 60_000)).toBe(TOTAL);
  // Settled: nothing more arrives.
  await new Promise((r) => setTimeout(r, 1500));
  const rows = await queryArchive<{ nonce: string; n: string }>(
    url,
    `SELECT headers->>'x-svc-nonce' AS nonce, count(*) AS n FROM webhook_archive.notifications GROUP BY 1`,
  );
  expect(rows).toHaveLength(TOTAL);
  expect(rows.every((r) => r.n === '1')).toBe(true);
  expect(new Set(rows.map((r) => r.nonce))).toEqual(new Set(answers.map((a) => a.nonce)));
}, 180_000);
