/**
 * How many timers keep this process alive now (unref'd ones do not count): a connection that a close
 * left half open often shows only as the client library's heartbeat timers still running.
 */
export function timersKeepingAlive(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}
