import { Redis } from 'ioredis';
import type { RedisClient } from './connect';

const held = new WeakSet<object>();

/**
 * Holds the connection's socket writes until this turn of the event loop ends (its check phase), so
 * the commands of every request handled in the turn leave in one write instead of one each. A write
 * to Redis is a system call that also wakes Redis; under load the receiver handles several requests
 * per turn, and on the 2-core bench machine these writes were the receiver's largest single cost
 * (15 % of its CPU in a profile under ingest load; docs/benchmarks.md, "Coalesced ingest writes").
 * Nothing waits longer than the turn: the writes are flushed before the loop next blocks, and a
 * connection that breaks meanwhile fails the held commands as it fails any sent ones.
 *
 * A single Redis or a Sentinel-managed master only: a cluster writes to the socket of the node that
 * owns each command's slot, chosen as the command is sent, so its writes are left as they are.
 *
 * The workers' connection holds every command so ({@link coalesceEveryTurn}).
 */
export function coalesceWritesThisTurn(connection: RedisClient): void {
  if (!(connection instanceof Redis)) return;
  const stream = connection.stream;
  if (!stream || held.has(stream) || !stream.writable) return;
  held.add(stream);
  stream.cork();
  setImmediate(() => {
    held.delete(stream);
    stream.uncork();
  });
}

/**
 * Holds every command sent on the connection until the end of its turn of the event loop, as
 * {@link coalesceWritesThisTurn} does for one: for the workers' shared connection, where a draining
 * worker finishes several jobs per turn (each a script call that also fetches the next job) and each
 * was a write of its own, waking Redis each time. Measurements on two machines disagree on what it
 * gains: docs/benchmarks.md ("A fourth machine") has both.
 */
export function coalesceEveryTurn(connection: RedisClient): void {
  if (!(connection instanceof Redis)) return;
  const send = connection.sendCommand.bind(connection);
  connection.sendCommand = (command, stream) => {
    coalesceWritesThisTurn(connection);
    return send(command, stream);
  };
}
