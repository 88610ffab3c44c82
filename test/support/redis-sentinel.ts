import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, RedisServer, withNode } from '../../src/demo/redis-server';

export const SENTINEL_MASTER_NAME = 'whr';

/**
 * A throwaway master, its replicas and a quorum of sentinels on free ports, config files and the
 * sentinels' logs in a temp dir removed on stop. Sentinels declare the master down after
 * `downAfterMs`, so a failover completes within a few seconds.
 *
 * `downAfterMs` is 2 s, as in Redis's own Sentinel tests, not less: a sentinel that switches to the new
 * master drops its link and may reconnect only a second after its last attempt (to the dead master),
 * and it must see the new master answer within `downAfterMs` of the switch. At 1 s a sentinel
 * sometimes did not, called the new master down, and the other sentinels' "down" answers about the
 * old one (kept 5 s) made that objective at once: a second failover away from a healthy master.
 * TILT (a sentinel whose own timer ran 2 s late stops acting, 30 s by default) lasts 5 s, as there too:
 * on a loaded machine a stalled sentinel otherwise holds a failover back for half a minute.
 */
export class RedisSentinelSet {
  private constructor(
    readonly dataNodes: RedisServer[],
    readonly sentinels: RedisServer[],
    private readonly dir: string,
  ) {}

  static async start({
    replicas = 2,
    sentinels = 3,
    downAfterMs = 2000,
    failoverTimeoutMs = 3000,
  } = {}): Promise<RedisSentinelSet> {
    const dir = mkdtempSync(path.join(tmpdir(), 'redis-sentinel-'));
    const set = new RedisSentinelSet([], [], dir);
    try {
      // Each node its own dir: a replica's full sync writes an RDB file there.
      const nodeDir = (i: number) => {
        const d = path.join(dir, `node-${i}`);
        mkdirSync(d);
        return d;
      };
      // A full sync starts at once rather than after Redis's 5 s wait for more replicas to join it.
      const sync = ['--repl-diskless-sync-delay', '0'];
      const master = await RedisServer.start({ args: ['--dir', nodeDir(0), ...sync] });
      set.dataNodes.push(master);
      for (let i = 1; i <= replicas; i++)
        set.dataNodes.push(
          await RedisServer.start({
            args: ['--dir', nodeDir(i), ...sync, '--replicaof', '127.0.0.1', String(master.port)],
          }),
        );
      const quorum = Math.floor(sentinels / 2) + 1;
      for (let i = 0; i < sentinels; i++) {
        const file = path.join(dir, `sentinel-${i}.conf`);
        writeFileSync(
          file,
          [
            `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${master.port} ${quorum}`,
            `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${downAfterMs}`,
            `sentinel failover-timeout ${SENTINEL_MASTER_NAME} ${failoverTimeoutMs}`,
            `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
            '',
          ].join('\n'),
        );
        const logfile = path.join(dir, `sentinel-${i}.log`);
        const node = await RedisServer.start({
          configFile: file,
          args: ['--dir', dir, '--logfile', logfile, '--sentinel'],
        });
        set.sentinels.push(node);
        await set.askOne(node.port, ['DEBUG', 'tilt-period', '5000']);
      }
      await set.waitUntilSettled(replicas, sentinels - 1);
      return set;
    } catch (err) {
      await set.stop();
      throw err;
    }
  }

  /** `host:port,…` of the sentinels, as REDIS_SENTINELS takes it. */
  get seeds(): string {
    return this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',');
  }

  /** The data node the sentinels name as master now. */
  async master(): Promise<RedisServer> {
    const [, port] = await this.ask(['get-master-addr-by-name', SENTINEL_MASTER_NAME]);
    const node = this.dataNodes.find((n) => n.port === Number(port));
    if (!node) throw new Error(`sentinels name an unknown master port ${String(port)}`);
    return node;
  }

  async replicas(): Promise<RedisServer[]> {
    const master = await this.master();
    return this.dataNodes.filter((n) => n !== master && n.pid !== undefined);
  }

  /** Until each sentinel sees the replicas and the other sentinels: before that, a failover cannot be agreed. */
  private async waitUntilSettled(replicas: number, otherSentinels: number, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const views = await Promise.all(
        this.sentinels.map(async (s) => {
          const seen = (await this.askOne(s.port, ['replicas', SENTINEL_MASTER_NAME])) as unknown[];
          const peers = (await this.askOne(s.port, ['sentinels', SENTINEL_MASTER_NAME])) as unknown[];
          return seen.length >= replicas && peers.length >= otherSentinels;
        }),
      );
      if (views.every(Boolean)) return;
      if (Date.now() > deadline)
        throw new Error(`sentinels did not see each other and the replicas within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * Until every sentinel names the same master other than `old` and it answers as a master. Only
   * then may `old` come back: a sentinel still on the old view would make the new master a replica
   * of the returning one, and a master that keeps nothing on disk returns empty.
   */
  async waitForNewMaster(old: RedisServer, timeoutMs = 30_000): Promise<RedisServer> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ports = await Promise.all(
        this.sentinels.map((s) =>
          this.askOne(s.port, ['get-master-addr-by-name', SENTINEL_MASTER_NAME]).then(
            (a) => Number((a as string[])[1]),
            () => -1,
          ),
        ),
      );
      const master = this.dataNodes.find((n) => n.port === ports[0]);
      if (master && master !== old && ports.every((p) => p === master.port) && (await roleOf(master.port)) === 'master')
        return master;
      if (Date.now() > deadline) throw new Error(`no failover within ${timeoutMs} ms\n${this.lastEvents()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Until `node` runs as a replica (the sentinels reconfigure a returning old master). */
  async waitUntilReplica(node: RedisServer, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((await roleOf(node.port)) !== 'slave') {
      if (Date.now() > deadline) throw new Error(`${node.port} is not a replica after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Until the master counts `count` replicas online (linked and synced). A returning node is a
   * replica by role before its full sync ends; until then WAIT cannot count it.
   */
  async waitUntilReplicasOnline(count: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const master = await this.master().catch(() => undefined);
      const info = master ? await replicationInfo(master.port) : '';
      if ((info.match(/^slave\d+:.*state=online/gm) ?? []).length >= count) return;
      if (Date.now() > deadline)
        throw new Error(`the master does not count ${count} replicas online after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Each sentinel's last warnings (switches, votes, TILT), for an error that must say why no failover came. */
  private lastEvents(lines = 12): string {
    return this.sentinels
      .map((_, i) => {
        const log = readFileSync(path.join(this.dir, `sentinel-${i}.log`), 'utf8').split('\n');
        return [`sentinel ${i}:`, ...log.filter((l) => l.includes(' # ')).slice(-lines)].join('\n');
      })
      .join('\n');
  }

  private async ask(args: string[]): Promise<unknown[]> {
    let lastError: unknown;
    for (const s of this.sentinels) {
      try {
        return (await this.askOne(s.port, args)) as unknown[];
      } catch (err) {
        lastError = err;
      }
    }
    throw lastError instanceof Error ? lastError : new Error('no sentinel answered');
  }

  private askOne(port: number, args: string[]): Promise<unknown> {
    return withNode(port, (client) => client.call('SENTINEL', ...args));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.dataNodes].map((n) => n.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function replicationInfo(port: number): Promise<string> {
  return withNode(port, (client) => client.info('replication')).catch(() => '');
}

function roleOf(port: number): Promise<string | undefined> {
  return withNode(port, async (client) => ((await client.call('ROLE')) as [string])[0]).catch(() => undefined);
}

export { freePort };
