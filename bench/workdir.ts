import { createPrivateKey, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { generateTestKeyPair } from '../src/signing/keypair';

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

  /** The service's CONFIG_FILE: one target, the sink, subscribed to every event type. */
  writeServiceConfig(sinkUrl: string, concurrency: number): string {
    const file = this.file('service.yaml');
    const config = { targets: [{ name: 'sink', url: sinkUrl, events: ['*'], concurrency, format: 'standard' }] };
    writeFileSync(file, stringify(config));
    return file;
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
