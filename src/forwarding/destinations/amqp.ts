import type { Duplex } from 'node:stream';
import { connect, type ChannelModel, type ConfirmChannel, type Message, type MessageFields } from 'amqplib';
import type { OutgoingRequest } from '../build-request';
import type { DeliveryTransport } from '../delivery-transport';
import {
  brokerFailure,
  connectionNotices,
  describeError,
  LazyConnection,
  messageSeconds,
  readTlsFiles,
  remainingMs,
} from './broker';
import type { Logger } from '../../logging/logger';
import { fillTemplate, type AmqpDestination } from '../../model/destination-schema';
import type { DeliveryJob, DeliveryResult } from '../../model/jobs';
import type { Target } from '../../model/target-schema';

declare module 'amqplib' {
  /**
   * The connection's socket, which amqplib keeps as `stream` and its types leave out: amqplib has no
   * public call that ends a connection whose broker does not answer a close (see destroySocket).
   */
  interface Connection {
    readonly stream?: Duplex;
  }
}

/**
 * Seconds between AMQP heartbeats unless the URL says (`?heartbeat=`): a broker that stops answering is noticed within
 * two.
 */
const HEARTBEAT_S = 10;

interface Link {
  model: ChannelModel;
  channel: ConfirmChannel;
  /** Why the channel or connection closed, when the broker said (a 404 for a missing exchange). */
  closedBy?: string;
  /** Message ids the broker returned (no queue took them); their confirm follows the return. */
  returned: Map<string, string>;
}

/** The URL with the default heartbeat, unless it sets its own. */
function withHeartbeat(url: string): string {
  const u = new URL(url);
  if (!u.searchParams.has('heartbeat')) u.searchParams.set('heartbeat', String(HEARTBEAT_S));
  return u.toString();
}

/** Opens a connection and one confirm channel on it; `onLost` runs once when either closes. */
export async function openAmqp(
  d: AmqpDestination,
  connectTimeoutMs: number,
  onLost: (link: Link) => void,
): Promise<Link> {
  const tls = d.url.startsWith('amqps:') ? readTlsFiles(d.tls) : {};
  const model = await connect(withHeartbeat(d.url), { ...tls, timeout: connectTimeoutMs });
  // Listened to from the start: a connection that fails while its channel opens (a broker restarting,
  // a missed heartbeat) would otherwise emit an 'error' nobody handles, which ends the process.
  model.on('error', () => undefined);
  let channel: ConfirmChannel;
  try {
    channel = await model.createConfirmChannel();
  } catch (err) {
    // Not a polite close: the broker that failed the channel may not answer one.
    destroySocket(model);
    throw err;
  }
  const link: Link = { model, channel, returned: new Map() };
  let lost = false;
  const lose = (err?: Error) => {
    if (err?.message) link.closedBy ??= err.message;
    if (lost) return;
    lost = true;
    onLost(link);
    // A channel closed by the broker (a missing exchange) leaves the connection open: close it too.
    model.close().catch(() => undefined);
  };
  model.on('error', lose);
  model.on('close', lose);
  channel.on('error', lose);
  channel.on('close', () => lose());
  channel.on('return', (msg: Message) => {
    const id = msg.properties.messageId as string | undefined;
    // A basic.return's fields (amqplib's types name only a delivery's).
    const { replyCode, replyText } = msg.fields as MessageFields & { replyCode?: number; replyText?: string };
    if (id !== undefined) link.returned.set(id, `${replyCode ?? '?'} ${replyText ?? ''}`.trim());
  });
  return link;
}

/**
 * RabbitMQ through one connection and confirm channel per target and worker process. A delivery is a
 * persistent, `mandatory` publish that the broker confirmed (ack); a nack, a return (no queue bound for
 * the routing key), a closed channel or no confirm within the target's `timeoutMs` is a failure, retried
 * with the target's backoff.
 */
export function createAmqpTransport(target: Target, d: AmqpDestination, logger?: Logger): DeliveryTransport {
  const links: LazyConnection<Link> = new LazyConnection<Link>(
    () => openAmqp(d, target.timeoutMs, (link) => links.lost(link, link.closedBy ?? 'the connection closed')),
    async (link) => link.model.close(),
    (link) => destroySocket(link.model),
    connectionNotices(logger, target.name, 'RabbitMQ'),
  );

  function publish(link: Link, message: OutgoingRequest, job: DeliveryJob, started: number): Promise<DeliveryResult> {
    const elapsed = () => Math.round(performance.now() - started);
    const { 'content-type': contentType, ...headers } = message.headers;
    const routingKey = fillTemplate(d.routingKey, job.eventType);
    const where = `exchange "${d.exchange}" with routing key "${routingKey}"`;
    return new Promise<DeliveryResult>((resolve, reject) => {
      // Connecting and confirming share the target's timeoutMs: a send never takes longer than that.
      const timer = setTimeout(
        () =>
          reject(brokerFailure('timeout', `no publisher confirm from RabbitMQ for ${where} (timeoutMs)`, elapsed())),
        remainingMs(target.timeoutMs, started),
      );
      const content = typeof message.body === 'string' ? Buffer.from(message.body) : message.body;
      try {
        link.channel.publish(
          d.exchange,
          routingKey,
          content,
          {
            persistent: true,
            mandatory: true,
            messageId: job.eventId,
            type: job.eventType,
            timestamp: messageSeconds(message.headers),
            contentType,
            headers,
          },
          (err: unknown) => {
            clearTimeout(timer);
            const returned = link.returned.get(job.eventId);
            link.returned.delete(job.eventId);
            if (returned !== undefined) {
              reject(
                brokerFailure(
                  'unroutable',
                  `unroutable: RabbitMQ returned the message (${returned}): no queue is bound to ${where}`,
                  elapsed(),
                ),
              );
            } else if (err) {
              const why = link.closedBy ?? describeError(err);
              reject(brokerFailure('broker', `RabbitMQ did not confirm the publish to ${where}: ${why}`, elapsed()));
            } else {
              resolve({ latencyMs: elapsed(), confirmed: 'publisher confirm' });
            }
          },
        );
      } catch (err) {
        clearTimeout(timer);
        // A message the client cannot encode (a header table over 64 KiB) fails the same way every time.
        const permanent = err instanceof RangeError;
        reject(
          brokerFailure(
            permanent ? 'broker' : 'connection_reset',
            `cannot publish to RabbitMQ: ${describeError(link.closedBy ?? err)}`,
            elapsed(),
            permanent,
          ),
        );
      }
    });
  }

  return {
    async send(message, job) {
      const started = performance.now();
      const link = await links.getWithin(target.timeoutMs, 'RabbitMQ', started);
      return publish(link, message, job, started);
    },
    close: (ms) => links.close(ms),
  };
}

/**
 * Ends a connection whose broker does not answer a close (frozen). The socket is destroyed with an
 * error because amqplib learns of a lost socket only from its 'error' or 'end': a bare destroy()
 * emits neither, so the connection stayed open to amqplib, its heartbeat timers kept the process
 * alive for up to two intervals (20 s) and pending confirms waited as long. With the error, amqplib
 * closes the connection at once: it stops its heartbeat and settles every pending confirm with an error.
 */
function destroySocket(model: ChannelModel): void {
  model.connection.stream?.destroy(new Error('connection cut: the broker did not answer the close'));
}
