import { testRedisUrl, uniquePrefix } from './support/harness';
import { describeSends, sendEvery, trickleHeaders } from './support/hostile-clients';
import { FakePlatform } from './support/platform';
import { ServiceProcess } from './support/service-process';
import { sourceOf } from '../src/http/connection-gate';

// Real service processes under 1,100 hostile connections, 30 s of genuine traffic each.
jest.setTimeout(90_000);

const platform = new FakePlatform();
const ATTACKERS = 1100; // more than maxConnections (1024 by default)
const NOTIFICATIONS = 30;

async function underTrickle(
  env: Record<string, string>,
): Promise<{ sent: Awaited<ReturnType<typeof sendEvery>>; service: ServiceProcess; opened: number }> {
  const service = await ServiceProcess.startQuiet({
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix(),
    PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64,
    ...env,
  });
  // Each refused connection is reopened within 0.5 to 1.5 s: about a thousand new connections a second
  // from the attacker, without starving the other test files' processes on a shared 2-core machine.
  const attack = trickleHeaders(service.port, ATTACKERS, { localAddress: '127.0.0.1', reopenMs: 1000 });
  try {
    await new Promise((r) => setTimeout(r, 2000)); // every attacker connection has arrived at least once
    const sent = await sendEvery(platform, service.port, NOTIFICATIONS, 1000, { localAddress: '127.0.0.2' });
    return { sent, service, opened: attack.opened() };
  } finally {
    await attack.stop();
    await service.kill('SIGKILL');
  }
}

function expectAnswered(sent: Awaited<ReturnType<typeof sendEvery>>): void {
  const inTime = sent.filter((s) => s.status === 200 && s.ms <= 2000);
  expect(inTime.length).toBeGreaterThanOrEqual(NOTIFICATIONS - 1);
}

describe('1,100 connections trickling headers from 127.0.0.1, the platform on 127.0.0.2', () => {
  it('with PLATFORM_SOURCE_CIDRS=127.0.0.2: every attacker connection is refused on arrival, and at least 29 of 30 genuine notifications are answered 200 within 2 s', async () => {
    const { sent, service, opened } = await underTrickle({ PLATFORM_SOURCE_CIDRS: '127.0.0.2', LOG_LEVEL: 'warn' });
    console.log(`allowlist on accept: ${opened} attacker connections opened; genuine: ${describeSends(sent)}`);
    expectAnswered(sent);
    expect(service.lines.find((l) => l.reason === 'source_not_allowed')).toMatchObject({
      level: 'warn',
      message: 'connections refused on arrival: source address not allowed',
      source: '127.0.0.1',
    });
  });

  it("with no allowlist: the source's share (maxConnectionsPerSource, 64) bounds the attacker, and at least 29 of 30 genuine notifications are answered 200 within 2 s", async () => {
    const { sent, service, opened } = await underTrickle({ LOG_LEVEL: 'warn' });
    console.log(`per-source share: ${opened} attacker connections opened; genuine: ${describeSends(sent)}`);
    expectAnswered(sent);
    expect(service.lines.find((l) => l.reason === 'source_connection_cap')).toMatchObject({
      level: 'warn',
      source: '127.0.0.1',
      maxConnectionsPerSource: 64,
    });
  });
});

describe('the source a connection counts against', () => {
  it('is the IPv4 address (mapped or not), or the /64 of an IPv6 one', () => {
    expect(sourceOf('203.0.113.7')).toBe('203.0.113.7');
    expect(sourceOf('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(sourceOf('2001:db8:0:1:aaaa::1')).toBe('2001:db8:0:1::/64');
    expect(sourceOf('2001:db8:0:1:bbbb:cccc:dddd:eeee')).toBe('2001:db8:0:1::/64');
    expect(sourceOf('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(sourceOf('::1')).toBe('0:0:0:0::/64');
  });
});
