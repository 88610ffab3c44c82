import { Agent } from 'undici';
import { attemptDelivery, httpEndpoint } from './attempt';
import type { DeliveryTransport } from './delivery-transport';
import { settlesWithin } from '../model/with-timeout';
import type { Target } from '../model/target-schema';
import { createRedisStreamTransport } from './destinations/redis-stream';
import { createPostgresTransport } from './destinations/postgres';
import type { Logger } from '../logging/logger';

/** HTTP POST to the target's URL over one connection pool per target and worker process. */
export function createHttpTransport(target: Target): DeliveryTransport {
  const dispatcher = new Agent({ connections: target.concurrency, keepAliveTimeout: 4000 });
  const endpoint = httpEndpoint(target.url!);
  return {
    send: (message) => attemptDelivery(target, dispatcher, message, endpoint),
    async close(ms) {
      if (!(await settlesWithin(dispatcher.close(), ms))) await dispatcher.destroy();
    },
  };
}

/**
 * The transport for a target's kind of destination: its `url` (HTTP), its message broker or its PostgreSQL
 * table (which log their connection lost and restored).
 */
export function createTransport(target: Target, logger?: Logger): DeliveryTransport {
  const d = target.destination;
  switch (d?.type) {
    case undefined:
      return createHttpTransport(target);
    case 'amqp':
      return loadedOnFirstSend(async () =>
        (await import('./destinations/amqp')).createAmqpTransport(target, d, logger),
      );
    case 'nats':
      return loadedOnFirstSend(async () =>
        (await import('./destinations/nats')).createNatsTransport(target, d, logger),
      );
    case 'redis-stream':
      return createRedisStreamTransport(target, d, logger);
    case 'postgres':
      return createPostgresTransport(target, d, logger);
  }
}

/**
 * A broker's transport, its client library loaded with the first send (the transport connects then
 * anyway): a process with no target of that kind never loads amqplib or the NATS client, whose code
 * would otherwise stay in every worker's heap.
 */
function loadedOnFirstSend(load: () => Promise<DeliveryTransport>): DeliveryTransport {
  let transport: Promise<DeliveryTransport> | undefined;
  return {
    send: async (message, job) => (await (transport ??= load())).send(message, job),
    async close(ms) {
      if (transport) await (await transport).close(ms);
    },
  };
}
