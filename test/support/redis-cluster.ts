import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { RedisServer, withNode } from '../../src/demo/redis-server';

const run = promisify(execFile);

/**
 * A throwaway Redis Cluster on free ports (`redis-server --cluster-enabled yes` per node, joined
 * with `redis-cli --cluster create`), keeping nothing but its node files in a temp dir removed on
 * stop. A short node timeout makes a replica take over within a few seconds of its master's death.
 */
export class RedisCluster {
  private constructor(
    readonly nodes: RedisServer[],
    private readonly dir: string,
  ) {}

  static async start({ masters = 3, replicasPerMaster = 1, nodeTimeoutMs = 1000 } = {}): Promise<RedisCluster> {
    const dir = mkdtempSync(path.join(tmpdir(), 'redis-cluster-'));
    const nodes: RedisServer[] = [];
    const cluster = new RedisCluster(nodes, dir);
    try {
      for (let i = 0; i < masters * (1 + replicasPerMaster); i++) {
        // Each node its own dir: its node file, and the RDB file a replica's full sync writes.
        const nodeDir = path.join(dir, `node-${i}`);
        mkdirSync(nodeDir);
        nodes.push(
          await RedisServer.start({
            args: [
              '--cluster-enabled',
              'yes',
              '--dir',
              nodeDir,
              '--cluster-node-timeout',
              String(nodeTimeoutMs),
              '--repl-diskless-sync-delay',
              '0',
            ],
          }),
        );
      }
      const addresses = nodes.map((n) => `127.0.0.1:${n.port}`);
      await run('redis-cli', [
        '--cluster',
        'create',
        ...addresses,
        '--cluster-replicas',
        String(replicasPerMaster),
        '--cluster-yes',
      ]);
      await cluster.waitUntilHealthy();
      await cluster.waitForReplicas(replicasPerMaster);
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  /** `host:port,…` of every node, as REDIS_CLUSTER_NODES takes it. */
  get seeds(): string {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
  }

  /** Until every live node says the cluster is ok and every slot has a master (after start or a failover). */
  async waitUntilHealthy(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const states = await Promise.all(
        this.nodes.filter((n) => n.pid !== undefined).map((n) => clusterInfo(n.port).catch(() => '')),
      );
      if (states.every((s) => /cluster_state:ok/.test(s) && /cluster_slots_ok:16384/.test(s))) return;
      if (Date.now() > deadline) throw new Error(`the cluster is not healthy after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Until every master lists `perMaster` replicas (after start, or once a restarted node rejoins). */
  async waitForReplicas(perMaster: number, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ranges = await this.slotRanges().catch(() => []);
      if (ranges.length > 0 && ranges.every(([, , , ...replicas]) => replicas.length >= perMaster)) return;
      if (Date.now() > deadline) throw new Error(`masters lack replicas after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Until another node than `old` is master of the slot of `key` and the cluster is whole again. */
  async waitForFailover(key: string, old: RedisServer, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((await this.ownersOf(key).catch(() => ({ master: old }))).master === old) {
      if (Date.now() > deadline) throw new Error(`no failover within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await this.waitUntilHealthy(Math.max(1000, deadline - Date.now()));
  }

  /** The node that is master of the slot of `key` now, and its replicas. */
  async ownersOf(key: string): Promise<{ master: RedisServer; replicas: RedisServer[] }> {
    const slot = Number(await this.ask(['KEYSLOT', key]));
    const range = (await this.slotRanges()).find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`no node serves slot ${slot}`);
    const [, , master, ...replicas] = range;
    if (!master) throw new Error(`slot ${slot} has no master`);
    return { master: this.byPort(master[1]), replicas: replicas.map((r) => this.byPort(r[1])) };
  }

  /** Every node that is a replica now. */
  async replicas(): Promise<RedisServer[]> {
    return (await this.slotRanges()).flatMap(([, , , ...replicas]) => replicas.map((r) => this.byPort(r[1])));
  }

  private slotRanges(): Promise<[number, number, ...[string, number, string][]][]> {
    return this.ask(['SLOTS']) as Promise<[number, number, ...[string, number, string][]][]>;
  }

  private byPort(port: number): RedisServer {
    const node = this.nodes.find((n) => n.port === port);
    if (!node) throw new Error(`unknown node port ${port}`);
    return node;
  }

  /** Asks the first node that answers (a killed or paused one does not). */
  private async ask(args: string[]): Promise<unknown> {
    let lastError: unknown = new Error('no live node');
    for (const node of this.nodes.filter((n) => n.pid !== undefined)) {
      try {
        return await withNode(node.port, (client) => client.call('CLUSTER', ...args));
      } catch (err) {
        lastError = err;
      }
    }
    throw lastError;
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function clusterInfo(port: number): Promise<string> {
  return withNode(port, async (client) => String(await client.call('CLUSTER', 'INFO')));
}
