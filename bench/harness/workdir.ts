import { createPrivateKey, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { generateTestKeyPair } from '../../src/signing/keypair';

/** The field of a backlog body that an ordered drain orders by (bench/harness/backlog.ts fills it). */
export const ORDER_FIELD = 'bench_key';

/**
 * The service's targets in the bench: one, the sink, subscribed to every event type; with `orderKeys`,
 * ordered by `data.bench_key` (the backlog spreads its events over that many keys). With `count` > 1,
 * that many targets, each at its own path of the sink (`/hook/t1`...), which counts a delivery per
 * path. The backlog's producer fans out to the same targets as the worker that drains it, as a
 * receiver would. `extra`: more settings of each target (a transform).
 */
export function benchTargets(
  sinkUrl: string,
  concurrency: number,
  orderKeys = 0,
  count = 1,
  extra: Record<string, unknown> = {},
): Record<string, unknown>[] {
  const order = orderKeys > 0 ? { order: { key: `data.${ORDER_FIELD}` } } : {};
  if (count === 1)
    return [{ name: 'sink', url: sinkUrl, events: ['*'], concurrency, format: 'standard', ...order, ...extra }];
  return Array.from({ length: count }, (_, i) => ({
    name: `sink${i + 1}`,
    url: `${sinkUrl}/t${i + 1}`,
    events: ['*'],
    concurrency,
    format: 'standard',
    ...order,
    ...extra,
  }));
}

/**
 * A temporary folder for one run: the test platform key pair, the service's config file and the
 * files that carry presigned requests to the load generator.
 */
export class Workdir {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'whr-bench-'));
  readonly privateKey: KeyObject;
  readonly publicKeyFile = path.join(this.dir, 'platform-public.b64');

  constructor() {
    const pair = generateTestKeyPair();
    this.privateKey = createPrivateKey(pair.privateKeyPem);
    writeFileSync(this.publicKeyFile, pair.publicKeyBase64);
  }

  file(name: string): string {
    return path.join(this.dir, name);
  }

  /** The service's CONFIG_FILE: the targets of {@link benchTargets}. */
  writeServiceConfig(
    sinkUrl: string,
    concurrency: number,
    orderKeys = 0,
    count = 1,
    extra: Record<string, unknown> = {},
  ): string {
    const file = this.file('service.yaml');
    const config = { targets: benchTargets(sinkUrl, concurrency, orderKeys, count, extra) };
    writeFileSync(file, stringify(config));
    return file;
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
