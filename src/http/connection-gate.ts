import { isIPv6, type Socket } from 'node:net';
import type { Server } from 'node:http';
import type { Logger } from '../logging/logger';
import type { Metrics } from '../monitoring/metrics';

export interface ConnectionGateOptions {
  /** Concurrent connections one source may hold; more are closed on arrival. @defaultValue 64 */
  maxPerSource: number;
  /** When set, connections from addresses it refuses are closed on arrival. @defaultValue undefined (any address) */
  sourceAllowed?: (address: string | undefined) => boolean;
}

/** At most one line per reason per this interval, however many connections are refused. */
const LOG_INTERVAL_MS = 10_000;

/**
 * The source a connection counts against: its IPv4 address, or the /64 of an IPv6 one (one host
 * commonly holds a whole /64, so counting single IPv6 addresses would bound nothing).
 */
export function sourceOf(address: string | undefined): string {
  if (address === undefined) return '';
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice(7);
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.split('::', 2);
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * Judges each public-port connection as it is accepted, before a byte of it is parsed: no slot and
 * no timer for an address the allowlist refuses, and at most `maxPerSource` at once from one source,
 * so one sender trickling headers on many connections cannot take every slot of `maxConnections`.
 * Only meaningful when the peer is the sender itself: behind a trusted proxy every connection comes
 * from the proxy, whose own limits do this work.
 */
export function gateConnections(server: Server, opts: ConnectionGateOptions, logger: Logger, metrics: Metrics): void {
  const open = new Map<string, number>();
  const refused = { source_not_allowed: 0, source_connection_cap: 0 };
  const lastLog = { source_not_allowed: 0, source_connection_cap: 0 };

  function refuse(socket: Socket, reason: keyof typeof refused, source: string): void {
    socket.destroy();
    metrics.portRefusals.labels(reason).inc();
    refused[reason]++;
    const now = Date.now();
    if (now - lastLog[reason] < LOG_INTERVAL_MS) return;
    const text =
      reason === 'source_not_allowed'
        ? 'connections refused on arrival: source address not allowed'
        : 'connections refused on arrival: the source holds its share of connections';
    logger.warn(text, {
      outcome: 'rejected',
      reason,
      source,
      maxConnectionsPerSource: opts.maxPerSource,
      refusedSinceLastLine: refused[reason],
    });
    lastLog[reason] = now;
    refused[reason] = 0;
  }

  // Ahead of the HTTP server's own listener: a refused connection is closed before a parser is
  // taken for it (the HTTP listener then finds it destroyed and only frees what it set up on close).
  server.prependListener('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (opts.sourceAllowed !== undefined && !opts.sourceAllowed(address))
      return refuse(socket, 'source_not_allowed', address ?? '');
    const source = sourceOf(address);
    const held = open.get(source) ?? 0;
    if (held >= opts.maxPerSource) return refuse(socket, 'source_connection_cap', source);
    open.set(source, held + 1);
    socket.once('close', () => {
      const left = (open.get(source) ?? 1) - 1;
      if (left === 0) open.delete(source);
      else open.set(source, left);
    });
  });
}
