import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { BATCH_BYTES, BATCH_MS, createLogger } from '../src/logging/logger';

/** Every line written to `stream` so far, as text. */
function linesOf(stream: PassThrough): string[] {
  const out: string[] = [];
  let chunk: Buffer | null;
  while ((chunk = stream.read() as Buffer | null) !== null) out.push(chunk.toString('utf8'));
  return out.join('').split('\n').filter(Boolean);
}

const withoutTime = (line: string) => line.replace(/"timestamp":"[^"]+"/, '"timestamp":"T"');

describe('logger.record, the hot-path line', () => {
  const fields = {
    eventId: 'evt_01',
    eventType: 'payment.result',
    target: 'ledger "main"',
    attempt: 2,
    status: 200,
    latencyMs: 1.25,
    missing: undefined,
    none: null,
    ok: true,
    nested: { zeta: 'z', alpha: 'a\nb' },
  };

  it('writes the same bytes as winston for the same line, keys sorted, undefined left out', () => {
    const stream = new PassThrough();
    const logger = createLogger('info', stream);
    logger.info('delivered', fields);
    logger.record('info', 'delivered', fields);
    logger.warn('slow', { eventId: 'x', latencyMs: 3 });
    logger.record('warn', 'slow', { eventId: 'x', latencyMs: 3 });
    const [viaWinston, viaRecord, warnWinston, warnRecord] = linesOf(stream);
    expect(withoutTime(viaRecord!)).toBe(withoutTime(viaWinston!));
    expect(withoutTime(warnRecord!)).toBe(withoutTime(warnWinston!));
    expect(viaRecord).toMatch(
      /^\{"attempt":2,"eventId":"evt_01",.*"nested":\{"alpha":"a\\nb","zeta":"z"\},"none":null,"ok":true,.*"timestamp":"\d{4}-\d\d-\d\dT[^"]+Z"\}$/,
    );
    expect(viaRecord).not.toContain('missing');
  });

  it('respects the level and silence, as winston does', () => {
    const stream = new PassThrough();
    const logger = createLogger('warn', stream);
    logger.record('info', 'delivered', fields);
    logger.record('debug', 'delivered', fields);
    expect(linesOf(stream)).toEqual([]);
    logger.record('error', 'dead', { eventId: 'e' });
    expect(linesOf(stream)).toHaveLength(1);
    logger.level = 'info';
    logger.record('info', 'delivered', { eventId: 'e' });
    expect(linesOf(stream)).toHaveLength(1);
    logger.silent = true;
    logger.record('error', 'dead', { eventId: 'e' });
    expect(linesOf(stream)).toEqual([]);
  });
});

describe('batched lines (the service on stdout)', () => {
  it('writes the lines of one interval in one write, in the order logged, once the interval ends', async () => {
    const writes: string[] = [];
    const out = new Writable({
      decodeStrings: false,
      write: (chunk: string, _e, done) => (writes.push(chunk), done()),
    });
    const logger = createLogger('info', out, { batched: true });
    logger.info('first', { n: 1 });
    logger.record('info', 'second', { n: 2 });
    logger.warn('third', { n: 3 });
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual([]);
    logger.info('fourth', { n: 4 });
    await new Promise((r) => setTimeout(r, BATCH_MS + 10));
    expect(writes).toHaveLength(1);
    expect(
      writes[0]!
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { message: string }).message),
    ).toEqual(['first', 'second', 'third', 'fourth']);
  });

  it('writes at once when the held lines reach the batch size', () => {
    const writes: string[] = [];
    const out = new Writable({
      decodeStrings: false,
      write: (chunk: string, _e, done) => (writes.push(chunk), done()),
    });
    const logger = createLogger('info', out, { batched: true });
    const field = 'x'.repeat(1000);
    for (let i = 0; i * 1000 < BATCH_BYTES; i++) logger.record('info', 'line', { field });
    expect(writes).toHaveLength(1);
    expect(writes[0]!.length).toBeGreaterThanOrEqual(BATCH_BYTES);
  });

  it('writes the held lines when the process exits', () => {
    const script = `const { createLogger } = require(${JSON.stringify(require.resolve('../src/logging/logger'))}); const l = createLogger('info'); l.record('info', 'last words', { n: 1 }); process.exit(3);`;
    const run = spawnSync(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
      encoding: 'utf8',
      cwd: path.resolve(__dirname, '..'),
    });
    expect(run.status).toBe(3);
    expect(run.stdout).toMatch(/^\{.*"message":"last words".*\}\n$/);
  });
});
