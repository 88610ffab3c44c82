import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { postRaw } from './support/post-raw';
import { testRedisUrl, uniquePrefix } from './support/harness';
import { FakePlatform } from './support/platform';
import { ServiceProcess } from './support/service-process';
import { TargetServer } from './support/target-server';
import { tempDir } from './support/temp-dir';

jest.setTimeout(60000);

const ROOT = path.resolve(__dirname, '..');
const PROMTOOL = process.env.PROMTOOL_PATH ?? '/usr/bin/promtool';
const ADMIN_TOKEN = 'dashboard-test-admin-token';

interface Panel {
  title: string;
  type: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}

const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'deploy/grafana/webhook-receiver.json'), 'utf8')) as {
  uid: string;
  panels: Panel[];
};
const exprs = dashboard.panels
  .flatMap((p) => [p, ...(p.panels ?? [])])
  .flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));

const PROMQL_WORDS = new Set([
  'sum',
  'max',
  'min',
  'count',
  'by',
  'without',
  'rate',
  'increase',
  'histogram_quantile',
  'le',
  'on',
  'ignoring',
]);

/** The metric names a query reads: identifiers followed by `{`, `[` or `)`, that are not PromQL's own words or label names. */
function metricNames(expr: string): string[] {
  const withoutLabels = expr.replace(/\{[^}]*\}/g, '{}').replace(/by \([^)]*\)/g, '');
  return [...withoutLabels.matchAll(/\b([a-z_:][a-z0-9_:]*)\s*(?=[{[)])/g)]
    .map((m) => m[1]!)
    .filter((n) => !PROMQL_WORDS.has(n));
}

let text = '';
const started: ServiceProcess[] = [];
const targets: TargetServer[] = [];

beforeAll(async () => {
  // A live service with one target that takes everything (ordered, so its gauges are reported) and
  // one that refuses for good (dead letters); a delivered, a refused and a rejected notification.
  const ledger = await TargetServer.start();
  const erp = await TargetServer.start(() => ({ status: 400 }));
  targets.push(ledger, erp);
  const file = path.join(tempDir('dashboard'), 'config.yaml');
  writeFileSync(
    file,
    stringify({
      targets: [
        { name: 'ledger', url: ledger.url, events: ['*'], order: { key: 'merchantId', onDeadLetter: 'block' } },
        { name: 'erp', url: erp.url, events: ['payment.result'] },
      ],
    }),
  );
  const platform = new FakePlatform();
  const service = await ServiceProcess.start({
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix(),
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    CONFIG_FILE: file,
    ADMIN_TOKEN,
  });
  started.push(service);
  const base = `http://127.0.0.1:${service.port}`;
  const n = platform.signed('payment.result');
  await postRaw(base, n.target, n.headers, n.body).expect(200);
  const forged = platform.signed('payment.result');
  await postRaw(base, forged.target, forged.headers, Buffer.from('{"tampered":true}')).expect(401);
  await ledger.waitFor(() => ledger.successes().length === 1);
  await erp.waitFor(() => erp.requests.length === 1 && erp.requests[0]!.answered === 400);
  await new Promise((r) => setTimeout(r, 300));
  const res = await fetch(`http://127.0.0.1:${service.adminPort}/metrics`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(res.status).toBe(200);
  text = await res.text();
});

afterAll(async () => {
  await Promise.all(started.map((s) => s.kill('SIGKILL')));
  await Promise.all(targets.map((t) => t.close()));
});

describe('the Grafana dashboard (deploy/grafana/webhook-receiver.json)', () => {
  it('has a query on every panel but its rows, and reads the metrics of each thing it is meant to show', () => {
    expect(dashboard.panels.filter((p) => p.type !== 'row' && !p.targets?.length)).toEqual([]);
    const names = new Set(exprs.flatMap((e) => metricNames(e.expr)));
    for (const name of [
      'webhook_notifications_total',
      'webhook_ack_latency_seconds_bucket',
      'webhook_delivery_latency_seconds_bucket',
      'webhook_queue_jobs',
      'webhook_queue_oldest_waiting_seconds',
      'webhook_deliveries_total',
      'webhook_dead_letters_total',
      'webhook_ordering_blocked_keys',
      'webhook_redis_up',
      'webhook_redis_durability_risk',
    ]) {
      expect(names).toContain(name);
    }
  });

  it('uses only metric names that a live scrape of /metrics has', () => {
    // A sample, or the family's TYPE line: a labelled counter nothing has counted yet (no fan-out
    // failure in this run) is declared with no sample; a histogram's series are its family's.
    const sampled = new Set(
      text
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .map((l) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(l)?.[0]),
    );
    const declared = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    const exists = (name: string) =>
      sampled.has(name) || declared.has(name) || declared.get(name.replace(/_(bucket|sum|count)$/, '')) === 'histogram';
    const missing = exprs.flatMap(({ panel, expr }) =>
      metricNames(expr)
        .filter((n) => !exists(n))
        .map((name) => ({ panel, name })),
    );
    expect(missing).toEqual([]);
    // The check can fail: a name the service does not have is caught.
    expect(
      metricNames(
        'sum(rate(webhook_notification_total[5m])) + histogram_quantile(0.5, rate(webhook_ack_latency_bucket[5m]))',
      ).filter((n) => !exists(n)),
    ).toEqual(['webhook_notification_total', 'webhook_ack_latency_bucket']);
    // What this run did shows as samples, not declarations alone.
    for (const name of [
      'webhook_notifications_total',
      'webhook_ack_latency_seconds_bucket',
      'webhook_delivery_latency_seconds_bucket',
      'webhook_deliveries_total',
      'webhook_dead_letters_total',
      'webhook_queue_jobs',
      'webhook_ordering_blocked_keys',
      'webhook_redis_up',
      'webhook_redis_durability_risk',
    ]) {
      expect({ name, sampled: sampled.has(name) }).toEqual({ name, sampled: true });
    }
  });

  it("has queries Prometheus parses (promtool, with Grafana's $__rate_interval as 5m)", () => {
    if (!existsSync(PROMTOOL))
      throw new Error(
        `no promtool at ${PROMTOOL}: apt-get install prometheus (bash .ci/run does), or set PROMTOOL_PATH`,
      );
    const rules = {
      groups: [
        {
          name: 'dashboard',
          rules: exprs.map((e, i) => ({
            record: `dashboard:query:${i}`,
            expr: e.expr.replaceAll('$__rate_interval', '5m'),
          })),
        },
      ],
    };
    const file = path.join(tempDir('dashboard-rules'), 'rules.yml');
    writeFileSync(file, stringify(rules));
    expect(execFileSync(PROMTOOL, ['check', 'rules', file]).toString()).toMatch(
      new RegExp(`SUCCESS: ${exprs.length} rules found`),
    );
  });
});
