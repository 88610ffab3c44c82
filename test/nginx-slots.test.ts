import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../src/demo/redis-server';
import { stopChild } from '../src/demo/stop-child';
import { testRedisUrl, uniquePrefix } from './support/harness';
import { describeSends, sendEvery, trickleHeaders } from './support/hostile-clients';
import { FakePlatform } from './support/platform';
import { ServiceProcess } from './support/service-process';
import { tempDir } from './support/temp-dir';

// Real nginx (Debian's package) with the shipped deploy/nginx.conf in front of a real receiver process.
jest.setTimeout(90_000);

const platform = new FakePlatform();
const SHIPPED = path.resolve(__dirname, '../deploy/nginx.conf');

/** The shipped configuration with only what a test machine needs changed: the upstream and the port. */
function localConfig(listenPort: number, receiverPort: number): string {
  const shipped = readFileSync(SHIPPED, 'utf8');
  const replacements: [RegExp, string][] = [
    [
      /    server receiver-1:8080 [^\n]*\n    server receiver-2:8080 [^\n]*\n/,
      `    server 127.0.0.1:${receiverPort};\n`,
    ],
    [/listen 8080;/, `listen 127.0.0.1:${listenPort};`],
  ];
  let config = shipped;
  for (const [pattern, replacement] of replacements) {
    if (!pattern.test(config)) throw new Error(`deploy/nginx.conf no longer has ${pattern}`);
    config = config.replace(pattern, replacement);
  }
  return config;
}

let nginx: ChildProcess | undefined;
let service: ServiceProcess | undefined;
let dir: string;
afterAll(async () => {
  if (nginx) await stopChild(nginx);
  await service?.kill('SIGKILL');
});

it('through nginx with deploy/nginx.conf, 2,100 connections trickling headers from 127.0.0.1: at least 29 of 30 genuine notifications from 127.0.0.2 answered 200 within 2 s', async () => {
  expect(spawnSync('nginx', ['-v']).status).toBe(0); // .ci/run installs Debian's nginx
  service = await ServiceProcess.startQuiet({
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix(),
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    // As in compose.yaml: the receiver believes the proxy's X-Forwarded-For; the allowlist then sees the sender.
    TRUST_PROXY: '127.0.0.1',
    PLATFORM_SOURCE_CIDRS: '127.0.0.2',
  });
  dir = tempDir('nginx');
  mkdirSync(path.join(dir, 'logs'));
  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  writeFileSync(conf, localConfig(port, service.port));
  const globals = `daemon off; pid ${dir}/nginx.pid; error_log ${dir}/logs/error.log warn;`;
  const check = spawnSync('nginx', ['-t', '-p', dir, '-c', conf, '-g', globals], { encoding: 'utf8' });
  expect(check.stderr).toMatch(/test is successful/);
  nginx = spawn('nginx', ['-p', dir, '-c', conf, '-g', globals], { stdio: 'ignore' });
  for (let i = 0; ; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
    if (res?.status === 200) break;
    if (i > 100) throw new Error('nginx did not come up');
    await new Promise((r) => setTimeout(r, 100));
  }

  const attack = trickleHeaders(port, 2100, { localAddress: '127.0.0.1' });
  try {
    await new Promise((r) => setTimeout(r, 3000)); // every attacker connection has arrived
    const heldByAttacker = attack.open();
    const sent = await sendEvery(platform, port, 30, 1000, { localAddress: '127.0.0.2' });
    console.log(
      `through nginx: ${attack.opened()} attacker connections opened (${heldByAttacker} open at once); genuine: ${describeSends(sent)}`,
    );
    expect(heldByAttacker).toBeGreaterThan(2000);
    expect(sent.filter((s) => s.status === 200 && s.ms <= 2000).length).toBeGreaterThanOrEqual(29);
  } finally {
    await attack.stop();
  }
  const errors = readFileSync(path.join(dir, 'logs/error.log'), 'utf8');
  expect(errors).not.toMatch(/worker_connections are not enough/);
});
