import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { postRaw } from './support/post-raw';
import { testRedisUrl, uniquePrefix } from './support/harness';
import { FakePlatform } from './support/platform';
import { ServiceProcess } from './support/service-process';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

// Outside tools read what the service publishes: Prometheus's promtool reads a live /metrics, and
// Redocly's linter (recommended rules) reads docs/openapi.json. Both are prerequisites of the suite:
// Debian's `prometheus` package (promtool), and @redocly/cli, a dev dependency.
jest.setTimeout(60000);

const ROOT = path.resolve(__dirname, '..');
const PROMTOOL = process.env.PROMTOOL_PATH ?? '/usr/bin/promtool';
const ADMIN_TOKEN = 'outside-tools-admin-token-0123';
const platform = new FakePlatform();
let service: ServiceProcess;
let target: TargetServer;
let scrape: string;

beforeAll(async () => {
  target = await TargetServer.start();
  const config = path.join(tempDir('outside-tools'), 'config.yaml');
  writeFileSync(
    config,
    stringify({ targets: [{ name: 'ledger', url: target.url, events: ['*'], order: { key: 'data.request_id' } }] }),
  );
  service = await ServiceProcess.startQuiet({
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix(),
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    CONFIG_FILE: config,
    ADMIN_TOKEN,
  });
  const n = platform.signed('payment.result', {
    body: '{"type":"MERCH","data":{"request_id":"R1","status":"SUCCESS"}}',
  });
  await postRaw(`http://127.0.0.1:${service.port}`, n.target, n.headers, n.body).expect(200);
  await target.waitFor(() => target.successes().length === 1);
  const res = await fetch(`http://127.0.0.1:${service.adminPort}/metrics`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(res.status).toBe(200);
  scrape = await res.text();
});
afterAll(async () => {
  await service?.kill('SIGTERM');
  await target?.close();
});

describe('promtool check metrics on a live scrape', () => {
  it('exits 0 with nothing to say', () => {
    if (!existsSync(PROMTOOL))
      throw new Error(
        `no promtool at ${PROMTOOL}: apt-get install prometheus (bash .ci/run does), or set PROMTOOL_PATH`,
      );
    const run = spawnSync(PROMTOOL, ['check', 'metrics'], { input: scrape, encoding: 'utf8' });
    expect({ status: run.status, output: `${run.stdout}${run.stderr}`.trim() }).toEqual({ status: 0, output: '' });
  });

  it('and promtool check rules accepts the example alert rules (config/alerts.yml)', () => {
    if (!existsSync(PROMTOOL))
      throw new Error(
        `no promtool at ${PROMTOOL}: apt-get install prometheus (bash .ci/run does), or set PROMTOOL_PATH`,
      );
    const run = spawnSync(PROMTOOL, ['check', 'rules', path.join(ROOT, 'config/alerts.yml')], { encoding: 'utf8' });
    expect({ status: run.status, output: run.status === 0 ? '' : `${run.stdout}${run.stderr}` }).toEqual({
      status: 0,
      output: '',
    });
    expect(run.stdout).toMatch(/SUCCESS: \d+ rules found/);
  });
});

/** The file of README.md and docs/*.md whose table lists the series, and the series it names. */
function metricsTable(): { file: string; names: Set<string>; prefixes: string[] } {
  const files = [
    'README.md',
    ...readdirSync(path.join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const file = files.find((f) =>
    /^\| `webhook_notifications_total` \|/m.test(readFileSync(path.join(ROOT, f), 'utf8')),
  );
  if (!file) throw new Error('no metrics table (a row for webhook_notifications_total) in README.md or docs/');
  const rows = readFileSync(path.join(ROOT, file), 'utf8')
    .split('\n')
    .filter((l) => /^\| `[a-z_*]+`/.test(l));
  const names = new Set<string>();
  const prefixes: string[] = [];
  for (const row of rows) {
    for (const [, name = ''] of (row.split('|')[1] ?? '').matchAll(/`([a-z_*]+)`/g)) {
      if (name.endsWith('*')) prefixes.push(name.slice(0, -1));
      else names.add(name);
    }
  }
  return { file, names, prefixes };
}

describe('the metrics table', () => {
  it('lists every series a live service exports, and exports every series it lists', () => {
    const exported = [...scrape.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] ?? '');
    const { file, names, prefixes } = metricsTable();
    const missing = exported.filter((n) => !names.has(n) && !prefixes.some((p) => n.startsWith(p)));
    expect({ file, missing }).toEqual({ file, missing: [] });
    const stale = [...names].filter((n) => !exported.includes(n));
    expect({ file, stale }).toEqual({ file, stale: [] });
    expect(prefixes.every((p) => exported.some((n) => n.startsWith(p)))).toBe(true);
  });
});

describe('redocly lint, recommended rules, on docs/openapi.json', () => {
  it('passes', () => {
    const cli = path.join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');
    const out = execFileSync(
      process.execPath,
      [cli, 'lint', '--extends=recommended', '--format=summary', 'docs/openapi.json'],
      {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    expect(out).not.toMatch(/^error/m);
  });
});
