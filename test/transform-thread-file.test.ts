import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { buildService, type BuiltService } from './support/built-service';
import { DEFAULT_TRANSFORM_MAX_BYTES, startSandbox } from '../src/transform/sandbox';

// The sandbox thread runs from a file of its own: the TypeScript source here (Jest), the compiled
// JavaScript beside the compiled sandbox in a build.
const exact = { source: 'function transform(e) { return { id: e.id, n: e.data.n }; }', file: 'exact.js' };
const event = { id: 'evt_1', type: 'payment.result', timestamp: '', environment: null, merchantId: null };
const raw = '{"n": 1.000000000000000000001}';
const limits = { timeoutMs: 1000, maxBytes: DEFAULT_TRANSFORM_MAX_BYTES };

describe('the sandbox thread file', () => {
  it('when run from the TypeScript source, then a transform runs and keeps the exact number', async () => {
    const sandbox = startSandbox(exact, limits);
    try {
      await expect(sandbox.run({ event, raw })).resolves.toBe('{"id":"evt_1","n":1.000000000000000000001}');
    } finally {
      await sandbox.close();
    }
  });

  let built: BuiltService | undefined;
  afterAll(() => built?.remove());

  it('when run from compiled JavaScript, without any loader, then a transform runs and keeps the exact number', () => {
    built = buildService();
    const sandboxJs = path.join(path.dirname(built.nodeArgs[built.nodeArgs.length - 1]!), 'transform/sandbox.js');
    const script = `
      const { startSandbox } = require(${JSON.stringify(sandboxJs)});
      const sandbox = startSandbox(${JSON.stringify(exact)}, ${JSON.stringify(limits)});
      sandbox.run({ event: ${JSON.stringify(event)}, raw: ${JSON.stringify(raw)} })
        .then((body) => { process.stdout.write(body); return sandbox.close(); });`;
    const out = execFileSync(process.execPath, ['-e', script], { timeout: 20000 }).toString();
    expect(out).toBe('{"id":"evt_1","n":1.000000000000000000001}');
  });
});
