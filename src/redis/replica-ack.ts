import type { RedisClient } from './connect';

export interface ReplicaAck {
  /** Replicas that confirmed everything this connection wrote to the node, as WAIT counts them. */
  replicas: number;
  /** Whether `key` is on the node that confirmed: false when the write was lost in a failover. */
  present: boolean;
}

/**
 * Asks the node that holds `key` to wait until `replicas` replicas have everything this connection
 * wrote to it (`WAIT`), for at most `timeoutMs`. WAIT counts the writes of the connection it is
 * sent on, so it goes in one pipeline with a read of `key`: on a cluster the pipeline is routed to
 * the node of the key's slot (ours hold the hash-tagged prefix, so it is the node of the write), and
 * if the connection has meanwhile moved to a new master that lost the write, the key is missing there
 * and nothing is confirmed.
 */
export async function waitForReplicas(connection: RedisClient, key: string, replicas: number, timeoutMs: number): Promise<ReplicaAck> {
  // WAIT with timeout 0 blocks for ever.
  const results = await connection.pipeline().call('WAIT', replicas, Math.max(1, Math.floor(timeoutMs))).exists(key).exec();
  if (!results) throw new Error('WAIT pipeline was not run');
  const [waited, exists] = results;
  if (waited?.[0]) throw waited[0];
  if (exists?.[0]) throw exists[0];
  return { replicas: Number(waited?.[1]), present: Number(exists?.[1]) === 1 };
}
