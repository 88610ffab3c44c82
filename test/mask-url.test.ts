import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/run';
import { maskUrl } from '../src/logging/mask-url';
import type { RunningService } from '../src/service';
import { waitUntil } from './support/forwarding-harness';
import { LogCapture, testRedisUrl } from './support/harness';
import { FakePlatform } from './support/platform';
import { serviceEnv, startInProcess } from './support/in-process-service';
import { tempDir } from './support/temp-dir';

// Every URL shown goes through one masking function: passwords (a raw `@` in one included), a user
// name standing alone (a token), query parameters named like secrets, and URLs that do not parse.
jest.setTimeout(90000);

describe('maskUrl', () => {
  it.each([
    ['redis://127.0.0.1:6379/0', 'redis://127.0.0.1:6379/0'],
    ['https://ledger.example/hooks?v=2', 'https://ledger.example/hooks?v=2'],
    ['redis://user:s3cret@redis.internal:6379/0', 'redis://user:***@redis.internal:6379/0'],
    ['redis://:s3cret@redis.internal:6379', 'redis://:***@redis.internal:6379'],
    ['redis://user:p@ss@word@redis.internal:6379', 'redis://user:***@redis.internal:6379'],
    ['nats://S3CRETTOKEN@nats.internal:4222', 'nats://***@nats.internal:4222'],
    ['redis://h:6379/0?password=s3cret', 'redis://h:6379/0?password=***'],
    ['redis://h:6379/0?db=1&pass=s3cret&name=x', 'redis://h:6379/0?db=1&pass=***&name=x'],
    [
      'https://h/p?pwd=a&token=b&secret=c&key=d&auth=e&api_key=f',
      'https://h/p?pwd=***&token=***&secret=***&key=***&auth=***&api_key=***',
    ],
    ['amqp://user:s3cret@mq.internal/vhost?heartbeat=10', 'amqp://user:***@mq.internal/vhost?heartbeat=10'],
    ['redis://:pa/ss@h:6379/0', 'redis://***/0'],
    ['redis://user:s3cret@h:notaport/0?password=x', 'redis://***/0?password=***'],
    ['http://[::1:6379/?token=x', 'http://***/?token=***'],
  ])('%s is shown as %s', (url, shown) => {
    expect(maskUrl(url)).toBe(shown);
  });
});

describe('a query-string password', () => {
  const platform = new FakePlatform();
  const REDIS_SECRET = 'QueryRedisSecret4711';
  const BROKER_SECRET = 'QueryBrokerSecret0815';
  const TOKEN = 'mask-url-admin-token-0123';
  let service: RunningService | undefined;
  afterAll(async () => service?.close());

  it('appears nowhere: not in config check, the Targets page, GET /admin/api/targets, the logs or /metrics', async () => {
    const configFile = path.join(tempDir('mask-url'), 'config.yaml');
    writeFileSync(
      configFile,
      stringify({
        targets: [
          {
            name: 'stream',
            events: ['*'],
            destination: {
              type: 'redis-stream',
              url: `redis://127.0.0.1:1/0?password=${BROKER_SECRET}`,
              stream: 'events',
            },
          },
        ],
      }),
    );
    const env = serviceEnv(platform.keys.publicKeyBase64, {
      REDIS_URL: `${testRedisUrl()}/0?password=${REDIS_SECRET}`,
      CONFIG_FILE: configFile,
      ADMIN_TOKEN: TOKEN,
    });
    const shown: string[] = [];
    const out: string[] = [];
    const code = await runCli(['config', 'check'], {
      env,
      out: (l) => out.push(l),
      err: (l) => out.push(l),
      log: process.stderr,
    }).catch((err: Error) => err.message);
    shown.push(out.join('\n'));
    expect(String(code)).not.toContain(REDIS_SECRET);
    expect(shown[0]).toContain('password=***');

    const logs = new LogCapture();
    service = await startInProcess(env, logs);
    const admin = () => request(`http://127.0.0.1:${service!.admin.port}`);
    const auth = { authorization: `Bearer ${TOKEN}` };
    // Right after start the admin's Redis connection may still be opening (the page answers 500 then).
    let page = await admin().get('/admin/console/targets').set(auth);
    await waitUntil(
      async () => (page = await admin().get('/admin/console/targets').set(auth)).status === 200,
      20000,
      'the Targets page answers',
    );
    expect(page.text).toContain('password=***');
    const api = await admin().get('/admin/api/targets').set(auth).expect(200);
    expect(api.body).toMatchObject({ targets: [{ target: 'stream' }] });
    // A delivery to the broker fails (nothing listens on port 1) and is logged.
    const n = platform.signed('payment.result');
    await request(`http://127.0.0.1:${service.receiver!.port}`)
      .post(n.target)
      .set(n.headers)
      .send(n.body.toString())
      .expect(200);
    await waitUntil(() => logs.raw.some((l) => l.includes('"target":"stream"')), 30000, 'a delivery attempt logged');
    const metrics = await admin().get('/metrics').set(auth).expect(200);
    shown.push(page.text, JSON.stringify(api.body), metrics.text, ...logs.raw);
    for (const text of shown) {
      expect(text).not.toContain(REDIS_SECRET);
      expect(text).not.toContain(BROKER_SECRET);
    }
  });
});
