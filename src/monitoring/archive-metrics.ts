import { Gauge, type Registry } from 'prom-client';

/**
 * The archive's state as the gauges and /readyz show it: `up`, `down` (PostgreSQL refuses or is
 * unreachable: entries wait in Redis), `starting` (not migrated yet) or `receiver` (this process only
 * writes the stream; workers drain it), and the backlog (see archive/archiver.ts).
 */
export interface ArchiveStatus {
  state: string;
  backlog: number;
  oldestAgeSeconds: number;
}

/**
 * The evidence archive's gauges, read at scrape time: the backlog (acknowledged notifications and
 * delivery outcomes in the archive stream, not yet in PostgreSQL), the age of its oldest entry, and
 * whether this process's archiver can write (1), cannot (0), or runs none (absent).
 */
export function registerArchiveMetrics(registry: Registry, read: () => Promise<ArchiveStatus>): void {
  let last: Promise<ArchiveStatus | undefined> = Promise.resolve(undefined);
  let at = 0;
  // The three gauges come from one read per scrape.
  const current = () => {
    if (Date.now() - at > 500) {
      at = Date.now();
      last = read().catch(() => undefined);
    }
    return last;
  };
  new Gauge({
    name: 'webhook_archive_backlog',
    help: 'Entries in the archive stream not yet written to PostgreSQL',
    registers: [registry],
    async collect() {
      const s = await current();
      if (s) this.set(s.backlog);
    },
  });
  new Gauge({
    name: 'webhook_archive_backlog_age_seconds',
    help: 'Age of the oldest entry in the archive stream (0 when it is empty)',
    registers: [registry],
    async collect() {
      const s = await current();
      if (s) this.set(s.oldestAgeSeconds);
    },
  });
  new Gauge({
    name: 'webhook_archive_up',
    help: "1 when this process's archiver writes to PostgreSQL, 0 while it cannot (absent in a receiver-only process)",
    registers: [registry],
    async collect() {
      const s = await current();
      if (s && s.state !== 'receiver') this.set(s.state === 'up' ? 1 : 0);
    },
  });
}
