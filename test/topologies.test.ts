import { RedisCluster } from './support/redis-cluster';
import { RedisSentinelSet, SENTINEL_MASTER_NAME } from './support/redis-sentinel';
import { Redis } from 'ioredis';
import type { RedisServer } from '../src/demo/redis-server';
import type { ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';
import {
  runFailover,
  runLaggingReplicaFailover,
  runReplicasPaused,
  runWholePath,
  HEAL_BOUND_MS,
  type FailoverResult,
  type LaggingFailoverResult,
} from './support/topology-scenarios';
import { keyPrefix } from '../src/model/names';

const platform = new FakePlatform();

describe('on a Redis Cluster of three masters with a replica each', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await RedisCluster.start({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 1000 });
  }, 60_000);
  afterAll(() => cluster?.stop());

  it('receives, de-duplicates, forwards, dead-letters, replays, and serves admin reads and metrics', async () => {
    await runWholePath(platform, { REDIS_CLUSTER_NODES: cluster.seeds }, async (prefix) =>
      keysOnNode((await cluster.ownersOf(prefix)).master.port, prefix),
    );
  }, 60_000);

  it('with REDIS_MIN_REPLICAS_ACK=1 and every replica paused, answers 503 within the bound, and 200 once they resume', async () => {
    await runReplicasPaused(platform, { REDIS_CLUSTER_NODES: cluster.seeds }, () => cluster.replicas());
  }, 60_000);

  /**
   * Kills the master of the run's slot. Healing waits until its replica has taken over, then restarts
   * the node, which rejoins as a replica. (Restarted sooner, a master that keeps nothing on disk comes
   * back empty and its replica copies the emptiness: docs/deploy.md.)
   */
  let killed: { node: RedisServer; slotKey: string } | undefined;
  const killSlotMaster = async (f: ForwardingHarness) => {
    const slotKey = keyPrefix(f.config.queuePrefix);
    killed = { node: (await cluster.ownersOf(slotKey)).master, slotKey };
    await killed.node.stop();
  };
  const restartKilled = async () => {
    if (!killed) return;
    await cluster.waitForFailover(killed.slotKey, killed.node, 60_000);
    await killed.node.start();
    await cluster.waitForReplicas(1);
  };

  it('with REDIS_MIN_REPLICAS_ACK=1, when the master is killed while notifications arrive, every acknowledged one is delivered and the service resumes', async () => {
    const result = await runFailover(
      platform,
      { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_MIN_REPLICAS_ACK: '1' },
      killSlotMaster,
      restartKilled,
    );
    report('cluster', 1, result);
    expect(result.lost).toEqual([]);
    expect(result.acknowledgedAfterKill).toBeGreaterThanOrEqual(20);
  }, 180_000);

  it('with REDIS_MIN_REPLICAS_ACK=0, the service resumes on its own after the kill (what it loses is reported, not promised)', async () => {
    const result = await runFailover(
      platform,
      { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_MIN_REPLICAS_ACK: '0' },
      killSlotMaster,
      restartKilled,
    );
    report('cluster', 0, result);
    expect(result.acknowledgedAfterKill).toBeGreaterThanOrEqual(20);
  }, 180_000);

  it(
    'when the master dies while its replica lags, REDIS_MIN_REPLICAS_ACK=1 acknowledged none of what only the master held; at 0 that was acknowledged and lost',
    async () => {
      const topology = {
        replicas: async (f: ForwardingHarness) => (await cluster.ownersOf(keyPrefix(f.config.queuePrefix))).replicas,
        kill: killSlotMaster,
        heal: restartKilled,
      };
      expectLaggingOutcomes(
        'cluster',
        await runLaggingReplicaFailover(
          platform,
          { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_MIN_REPLICAS_ACK: '1' },
          topology,
        ),
        await runLaggingReplicaFailover(
          platform,
          { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_MIN_REPLICAS_ACK: '0' },
          topology,
        ),
      );
    },
    2 * HEAL_BOUND_MS + 60_000,
  );
});

describe('under Sentinel: a master, two replicas and three sentinels', () => {
  let sentinel: RedisSentinelSet;
  beforeAll(async () => {
    sentinel = await RedisSentinelSet.start({ replicas: 2, sentinels: 3 });
  }, 60_000);
  afterAll(() => sentinel?.stop());
  const env = () => ({ REDIS_SENTINELS: sentinel.seeds, REDIS_SENTINEL_MASTER: SENTINEL_MASTER_NAME });

  it('receives, de-duplicates, forwards, dead-letters, replays, and serves admin reads and metrics', async () => {
    await runWholePath(platform, env(), async (prefix) => keysOnNode((await sentinel.master()).port, prefix));
  }, 60_000);

  it('with REDIS_MIN_REPLICAS_ACK=1 and every replica paused, answers 503 within the bound, and 200 once they resume', async () => {
    await runReplicasPaused(platform, env(), () => sentinel.replicas());
  }, 60_000);

  /** Kills the master; healing waits for the sentinels to promote a replica and restarts the old node, which they make a replica. */
  let killed: RedisServer | undefined;
  const killMaster = async () => {
    killed = await sentinel.master();
    await killed.stop();
  };
  const restartKilled = async () => {
    if (!killed) return;
    // Within HEAL_BOUND_MS in all, so that a wait that does not end names itself.
    await sentinel.waitForNewMaster(killed, 50_000);
    await killed.start();
    await sentinel.waitUntilReplica(killed, 20_000);
    // Both replicas synced again before the next test: one that is still in its full sync cannot confirm a WAIT.
    await sentinel.waitUntilReplicasOnline(2, 20_000);
  };

  it('with REDIS_MIN_REPLICAS_ACK=1, when the master is killed while notifications arrive, every acknowledged one is delivered and the service resumes', async () => {
    const result = await runFailover(platform, { ...env(), REDIS_MIN_REPLICAS_ACK: '1' }, killMaster, restartKilled);
    report('sentinel', 1, result);
    expect(result.lost).toEqual([]);
    expect(result.acknowledgedAfterKill).toBeGreaterThanOrEqual(20);
  }, 180_000);

  it('with REDIS_MIN_REPLICAS_ACK=0, the service resumes on its own after the kill (what it loses is reported, not promised)', async () => {
    const result = await runFailover(platform, { ...env(), REDIS_MIN_REPLICAS_ACK: '0' }, killMaster, restartKilled);
    report('sentinel', 0, result);
    expect(result.acknowledgedAfterKill).toBeGreaterThanOrEqual(20);
  }, 180_000);

  it(
    'when the master dies while its replicas lag, REDIS_MIN_REPLICAS_ACK=1 acknowledged none of what only the master held; at 0 that was acknowledged and lost',
    async () => {
      const topology = { replicas: () => sentinel.replicas(), kill: killMaster, heal: restartKilled };
      expectLaggingOutcomes(
        'sentinel',
        await runLaggingReplicaFailover(platform, { ...env(), REDIS_MIN_REPLICAS_ACK: '1' }, topology),
        await runLaggingReplicaFailover(platform, { ...env(), REDIS_MIN_REPLICAS_ACK: '0' }, topology),
      );
    },
    2 * HEAL_BOUND_MS + 60_000,
  );
});

/**
 * With the replicas lagging: at 1 every notification of the window is refused (503, the platform
 * retries) and nothing is lost; at 0 every one is answered 200 though no replica confirmed it. Whether
 * those are then lost is up to the kernel, not to us: a frozen replica's socket still buffers the
 * replication stream, which it applies when it runs again unless the dead master's reset discarded it
 * (seen both ways: 5 of 5 lost under Sentinel, 0 of 5 on the cluster). So the loss at 0 is reported,
 * and what is asserted is the acknowledgement without a replica. Either way the service resumes.
 */
function expectLaggingOutcomes(topology: string, strict: LaggingFailoverResult, loose: LaggingFailoverResult): void {
  for (const [ack, r] of [
    [1, strict],
    [0, loose],
  ] as const) {
    console.log(
      `${topology}, master killed while its replicas lag, REDIS_MIN_REPLICAS_ACK=${ack}: ${r.acknowledgedWhileLagging.length} of 5 acknowledged, ${r.lost.length} of them lost, resumed: ${r.resumed}`,
    );
  }
  expect(strict.acknowledgedWhileLagging).toEqual([]);
  expect(strict.lost).toEqual([]);
  expect(strict.resumed).toBe(true);
  expect(loose.acknowledgedWhileLagging).toHaveLength(5);
  expect(loose.resumed).toBe(true);
}

/** One line per failover run, for the CI log: how many were acknowledged, lost and refused. */
function report(topology: string, ack: number, result: FailoverResult): void {
  console.log(
    `${topology} failover, REDIS_MIN_REPLICAS_ACK=${ack}: ${result.acknowledged.length} acknowledged (${result.acknowledgedAfterKill} after the kill), ${result.lost.length} of them lost, ${result.refused} refused`,
  );
}

/** The keys under `prefix` on one node, asked of that node directly (no cluster or sentinel client). */
async function keysOnNode(port: number, prefix: string): Promise<string[]> {
  const node = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  try {
    return await node.keys(`${prefix}:*`);
  } finally {
    node.disconnect();
  }
}
