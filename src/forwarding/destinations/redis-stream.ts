import { Redis } from 'ioredis';
import type { DeliveryTransport } from '../delivery-transport';
import { brokerFailure, classifyClientError, connectionNotices, describeError, readTlsFiles } from './broker';
import type { Logger } from '../../logging/logger';
import { fillTemplate, type RedisStreamDestination } from '../../model/destination-schema';
import type { Target } from '../../model/target-schema';
import { settlesWithin } from '../../model/with-timeout';

/** A client for a destination's Redis: connects on the first command, reconnects by itself with backoff. */
export function openStreamRedis(d: RedisStreamDestination, timeoutMs: number): Redis {
  const tls = d.url.startsWith('rediss:') ? readTlsFiles(d.tls) : undefined;
  const redis = new Redis(d.url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    // Every command (XADD, WAIT) ends by the target's timeout: one sent to a Redis that stopped answering
    // fails then, and its job retries; none is replayed by the client after a reconnect.
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: (times) => Math.min(250 * 2 ** Math.min(times, 6), 10_000),
    disconnectTimeout: 0,
    ...(tls ? { tls } : {}),
  });
  return redis;
}

/**
 * A Redis stream through one client per target and worker process. A delivery is an `XADD` that the
 * stream's Redis answered with the entry's id, and, with `minReplicasAck`, that WAIT saw that many
 * replicas confirm within the target's `timeoutMs`. A retry after a lost answer adds the entry again:
 * a consumer de-duplicates by the `id` field.
 */
export function createRedisStreamTransport(
  target: Target,
  d: RedisStreamDestination,
  logger?: Logger,
): DeliveryTransport {
  const notices = connectionNotices(logger, target.name, 'Redis stream');
  let redis: Redis | undefined;
  let lastError = '';
  let closed = false;
  const client = () => {
    // A send that starts after close (a job the stopping worker still took) must not open a client nobody closes.
    if (closed) throw new Error('the destination is closed (worker stopping)');
    if (redis) return redis;
    const r = openStreamRedis(d, target.timeoutMs);
    redis = r;
    r.on('error', (err: Error) => (lastError = err.message));
    // The client reconnects by itself (its retryStrategy); the log hears once that it lost Redis and once that it is
    // back.
    r.on('close', () => redis === r && notices.lost(lastError || 'the connection closed'));
    r.on('ready', () => notices.restored());
    return r;
  };
  return {
    async send(message, job) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const stream = fillTemplate(d.stream, job.eventType);
      const fields = [
        'id',
        job.eventId,
        'type',
        job.eventType,
        'timestamp',
        message.headers['webhook-timestamp'] ?? '',
        'body',
        message.body,
      ];
      const signature = message.headers['webhook-signature'];
      if (signature !== undefined) fields.push('signature', signature);
      // Every header the message carries (content-type, x-webhook-environment, tracing …), as one JSON field.
      fields.push('headers', JSON.stringify(message.headers));
      try {
        const r = client();
        const entry =
          d.maxLen === undefined
            ? await r.xadd(stream, '*', ...fields)
            : await r.xadd(stream, 'MAXLEN', '~', d.maxLen, '*', ...fields);
        if (d.minReplicasAck > 0) {
          const acked = await r.wait(d.minReplicasAck, target.timeoutMs);
          if (acked < d.minReplicasAck) {
            throw brokerFailure(
              'broker',
              `only ${acked} of ${d.minReplicasAck} replicas confirmed stream "${stream}" entry ${entry} within ` +
                `${target.timeoutMs} ms (WAIT)`,
              elapsed(),
            );
          }
        }
        return { latencyMs: elapsed(), confirmed: `stream ${stream} entry ${entry}` };
      } catch (err) {
        if (err instanceof Error && err.name.endsWith('DeliveryError')) throw err;
        const text = describeError(err);
        if (/timed out/i.test(text))
          throw brokerFailure('timeout', `no answer from Redis to XADD on stream "${stream}" (timeoutMs)`, elapsed());
        const cls = err instanceof Error && err.name === 'ReplyError' ? 'broker' : classifyClientError(err);
        const why =
          /writeable|Connection is closed|max retries/i.test(text) && lastError ? `${text} (${lastError})` : text;
        throw brokerFailure(cls, `XADD to Redis stream "${stream}" failed: ${why}`, elapsed());
      }
    },
    async close(ms) {
      closed = true;
      const r = redis;
      redis = undefined;
      if (!r) return;
      await settlesWithin(r.quit(), ms);
      // A QUIT that timed out (commandTimeout), failed or got no answer leaves the socket open: drop it
      // now (disconnect() alone ends it on a timer), so close resolves with nothing of it left.
      if (r.status !== 'end') {
        r.disconnect();
        r.stream?.destroy();
      }
    },
  };
}
