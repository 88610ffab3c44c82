import { connect } from '@nats-io/transport-node';
import { headers as natsHeaders, InvalidArgumentError, TimeoutError, type NatsConnection } from '@nats-io/nats-core';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { DeliveryTransport } from '../delivery-transport';
import {
  brokerFailure,
  classifyClientError,
  connectionNotices,
  describeError,
  LazyConnection,
  readTlsFiles,
  remainingMs,
  type ConnectionNotices,
} from './broker';
import type { Logger } from '../../logging/logger';
import { fillTemplate, type NatsDestination } from '../../model/destination-schema';
import type { Target } from '../../model/target-schema';

interface Link {
  nc: NatsConnection;
  js: JetStreamClient;
}

/**
 * The servers without credentials, and the credentials (`nats://user:pass@…` or `nats://token@…`)
 * as the client takes them: the first server that names any gives them for all.
 */
export function natsConnectOptions(d: NatsDestination) {
  let auth: { user?: string; pass?: string; token?: string } = {};
  const servers = d.servers.map((server) => {
    const u = new URL(server);
    if ((u.username || u.password) && !auth.user && !auth.token) {
      const user = decodeURIComponent(u.username);
      auth = u.password ? { user, pass: decodeURIComponent(u.password) } : { token: user };
    }
    return `${u.protocol}//${u.host}`;
  });
  const useTls = d.tls !== undefined || d.servers.some((s) => s.startsWith('tls:'));
  const files = useTls ? readTlsFiles(d.tls) : undefined;
  const tls = files
    ? { ca: files.ca?.toString(), cert: files.cert?.toString(), key: files.key?.toString() }
    : undefined;
  return { servers, ...auth, ...(tls ? { tls } : {}) };
}

/** Connects to NATS; the client itself reconnects after a server restart, for ever, with its own backoff. */
export async function openNats(d: NatsDestination, name: string, timeoutMs: number): Promise<NatsConnection> {
  return connect({
    ...natsConnectOptions(d),
    name,
    timeout: timeoutMs,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
  });
}

/**
 * NATS JetStream through one connection per target and worker process. A delivery is a publish that
 * the stream capturing the subject acknowledged; `Nats-Msg-Id` (the event id) makes JetStream drop a
 * republish within the stream's duplicate window (its acknowledgement says `duplicate`), so a retry after
 * a lost acknowledgement stores nothing twice.
 */
export function createNatsTransport(target: Target, d: NatsDestination, logger?: Logger): DeliveryTransport {
  const notices = connectionNotices(logger, target.name, 'NATS');
  const links: LazyConnection<Link> = new LazyConnection<Link>(
    async () => {
      const nc = await openNats(d, `webhook-receiver ${target.name}`, target.timeoutMs);
      const link = { nc, js: jetstream(nc, { timeout: target.timeoutMs }) };
      void reportStatus(nc, notices);
      // Closed for good (not a reconnect, which the client does by itself): the next send connects anew.
      void nc.closed().then((err) => links.lost(link, err ? describeError(err) : 'the connection closed'));
      return link;
    },
    async ({ nc }) => nc.drain(),
    // Destroys the socket without flushing: a frozen server never answers the drain's flush.
    ({ nc }) => void nc.close().catch(() => undefined),
    notices,
  );

  return {
    async send(message, job) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const link = await links.getWithin(target.timeoutMs, 'NATS', started);
      const subject = fillTemplate(d.subject, job.eventType);
      const h = natsHeaders();
      for (const [name, value] of Object.entries(message.headers)) h.set(name, value);
      try {
        // Connecting and the acknowledgement share the target's timeoutMs: a send never takes longer than that.
        const ack = await link.js.publish(subject, message.body, {
          msgID: job.eventId,
          headers: h,
          timeout: remainingMs(target.timeoutMs, started),
        });
        return {
          latencyMs: elapsed(),
          confirmed: `stream ${ack.stream} seq ${ack.seq}${ack.duplicate ? ' duplicate' : ''}`,
        };
      } catch (err) {
        throw publishFailure(err, subject, elapsed());
      }
    },
    close: (ms) => links.close(ms),
  };
}

/**
 * The client reconnects by itself after a server restart; this tells the log once when it lost the
 * server and once when it is back (not each reconnect attempt). Ends when the connection closes.
 */
async function reportStatus(nc: NatsConnection, notices: ConnectionNotices): Promise<void> {
  for await (const s of nc.status()) {
    // Draining or closing is the worker stopping, not a lost server.
    if (s.type === 'disconnect' && !nc.isDraining() && !nc.isClosed()) notices.lost(`disconnected from ${s.server}`);
    else if (s.type === 'reconnect') notices.restored();
  }
}

/** Why a JetStream publish failed, as a failure the worker records. */
function publishFailure(err: unknown, subject: string, latencyMs: number): Error {
  const e = err as Error;
  if (e.name === 'JetStreamNotEnabled') {
    return brokerFailure(
      'no_stream',
      `no stream: no JetStream stream captures subject "${subject}" (nothing answered the publish)`,
      latencyMs,
    );
  }
  if (e instanceof TimeoutError)
    return brokerFailure('timeout', `no JetStream acknowledgement for subject "${subject}" (timeoutMs)`, latencyMs);
  // Larger than the server's max_payload: the same every time.
  if (e instanceof InvalidArgumentError)
    return brokerFailure('broker', `NATS refused the message: ${describeError(e)}`, latencyMs, true);
  const cls = classifyClientError(err);
  return brokerFailure(
    cls === 'network' ? 'broker' : cls,
    `JetStream publish to "${subject}" failed: ${describeError(err)}`,
    latencyMs,
  );
}
