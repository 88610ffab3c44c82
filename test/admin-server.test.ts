import { startAdmin, type RunningAdmin } from '../src/admin/server';
import { ConfigError } from '../src/config/errors';
import { loadConfig } from '../src/config/load';
import { createLogger } from '../src/logging/logger';
import { createMetrics } from '../src/monitoring/metrics';
import { createRedisConnector } from '../src/redis/connect';
import { createPipeline, pipelineOptions, type Pipeline } from '../src/pipeline/pipeline';
import { LogCapture, testConfig } from './support/harness';
import { exchange, rawRequest } from './support/raw-http';

const HEADERS_TIMEOUT_MS = 500;
const KEEP_ALIVE_TIMEOUT_MS = 300;
let admin: RunningAdmin;
let pipeline: Pipeline;

beforeAll(async () => {
  const config = testConfig({
    ROLE: 'worker',
    ADMIN_PORT: '0',
    ADMIN_TOKEN: 'server-test-token-0123456789',
    ADMIN_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
    ADMIN_REQUEST_TIMEOUT_MS: '1000',
    ADMIN_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_TIMEOUT_MS),
  });
  pipeline = createPipeline(createRedisConnector(config).open('producer'), pipelineOptions(config));
  admin = await startAdmin(
    config,
    pipeline,
    createLogger('error', new LogCapture().stream),
    createMetrics(undefined, false).registry,
  );
});
afterAll(async () => {
  await admin.close();
  await pipeline.close();
  pipeline.redis.disconnect();
});

describe('the admin server has its own timeouts', () => {
  it('cuts a connection that never finishes its headers within the headers timeout plus 2 s', async () => {
    const res = await exchange(admin.port, Buffer.from('GET /healthz HTTP/1.1\r\nHost: admin\r\n'), {
      timeoutMs: 6000,
    });
    expect(res.closedByServer).toBe(true);
    expect(res.closedAfterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
    expect(res.closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 2000);
  });

  it('closes an idle kept-alive connection after the keep-alive timeout', async () => {
    const res = await exchange(admin.port, rawRequest('GET', '/healthz', [['Host', 'admin']]), { timeoutMs: 6000 });
    expect(res.responses.map((r) => r.status)).toEqual([200]);
    expect(res.closedByServer).toBe(true);
    expect(res.closedAfterMs).toBeLessThan(KEEP_ALIVE_TIMEOUT_MS + 2000);
  });

  it('reads them from ADMIN_*_TIMEOUT_MS or admin.* and refuses a headers timeout past the request timeout', () => {
    expect(loadConfig({ ROLE: 'worker' }).admin).toEqual({
      requestTimeoutMs: 30000,
      headersTimeoutMs: 10000,
      keepAliveTimeoutMs: 5000,
    });
    expect(() => loadConfig({ ROLE: 'worker', ADMIN_HEADERS_TIMEOUT_MS: '40000' })).toThrow(ConfigError);
    expect(() => loadConfig({ ROLE: 'worker', ADMIN_HEADERS_TIMEOUT_MS: '40000' })).toThrow(
      /ADMIN_HEADERS_TIMEOUT_MS: must not exceed admin\.requestTimeoutMs/,
    );
  });
});
