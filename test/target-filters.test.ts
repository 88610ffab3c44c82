import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../src/config/errors';
import { loadConfig } from '../src/config/load';
import { filterProblems } from '../src/model/filter';
import { routeEvent } from '../src/routing/routing';
import { targetSchema, type Target } from '../src/model/target-schema';
import { loadVectors } from './support/vectors';
import { tempDir } from './support/temp-dir';

/** Routing of a production event (every target here takes production). */
const route = (targets: readonly Target[], eventType: string, payload: unknown, merchantId: string | undefined) =>
  routeEvent(targets, { eventType, payload, merchantId, environment: 'production' });

const { keys } = loadVectors();
const base = { PLATFORM_PUBLIC_KEYS: keys.platform_key_a_spki_base64 };

function target(name: string, extra: Record<string, unknown> = {}): Target {
  return targetSchema.parse({ name, url: 'http://127.0.0.1:1/x', events: ['*'], ...extra });
}

const names = (ts: Target[]) => ts.map((t) => t.name);
const payment = (currency: string, extra: Record<string, unknown> = {}) => ({
  type: 'PAY',
  data: { currency, request_id: 'PAY-1', ...extra },
});

describe('routeEvent', () => {
  const usdEur = target('usd-eur', { filter: { 'data.currency': { $in: ['USD', 'EUR'] } } });
  const gbp = target('gbp', { filter: { 'data.currency': 'GBP' } });
  const sub42 = target('sub-42', { filter: { merchantId: 'SUB-42' } });
  const all = target('all');
  const fxOnly = target('fx-only', { events: ['fx.result'] });
  const targets = [usdEur, gbp, sub42, all, fxOnly];

  it('when a payload field matches a filter, then that target delivers and the other subscribed filters are listed as filtered', () => {
    const routing = route(targets, 'payment.result', payment('EUR'), undefined);
    expect(names(routing.deliver)).toEqual(['usd-eur', 'all']);
    expect(names(routing.filtered)).toEqual(['gbp', 'sub-42']);
  });

  it('when the event carries X-Merch-Id, then merchantId is matched against it at the top level', () => {
    expect(names(route(targets, 'payment.result', payment('JPY'), 'SUB-42').deliver)).toEqual(['sub-42', 'all']);
    expect(names(route(targets, 'payment.result', payment('JPY'), 'SUB-7').deliver)).toEqual(['all']);
  });

  it('when the body carries its own merchantId, then only the header counts', () => {
    expect(
      names(route([sub42], 'payment.result', { ...payment('USD'), merchantId: 'SUB-42' }, undefined).filtered),
    ).toEqual(['sub-42']);
    expect(
      names(route([sub42], 'payment.result', { ...payment('USD'), merchantId: 'SUB-7' }, 'SUB-42').deliver),
    ).toEqual(['sub-42']);
  });

  it('a target not subscribed to the type is neither delivered to nor filtered', () => {
    const routing = route([fxOnly, gbp], 'payment.result', payment('USD'), undefined);
    expect(routing).toEqual({ deliver: [], filtered: [gbp] });
    expect(route([fxOnly], 'payment.result', payment('USD'), undefined)).toEqual({ deliver: [], filtered: [] });
  });

  it('operators: $exists false, $regex, $not, $or, $elemMatch and numeric comparisons', () => {
    const t = (filter: Record<string, unknown>) => target('t', { filter });
    const routed = (filter: Record<string, unknown>, payload: unknown, merchantId?: string) =>
      route([t(filter)], 'payment.result', payload, merchantId).deliver.length === 1;
    expect(routed({ merchantId: { $exists: false } }, payment('USD'))).toBe(true);
    expect(routed({ merchantId: { $exists: false } }, payment('USD'), 'SUB-1')).toBe(false);
    expect(routed({ 'data.request_id': { $regex: '^pay-', $options: 'i' } }, payment('USD'))).toBe(true);
    expect(routed({ 'data.currency': { $not: { $in: ['USD'] } } }, payment('USD'))).toBe(false);
    expect(routed({ $or: [{ 'data.currency': 'GBP' }, { merchantId: 'SUB-1' }] }, payment('USD'), 'SUB-1')).toBe(true);
    expect(
      routed(
        { 'data.items': { $elemMatch: { sku: 'A', qty: { $gte: 2 } } } },
        payment('USD', {
          items: [
            { sku: 'A', qty: 1 },
            { sku: 'A', qty: 3 },
          ],
        }),
      ),
    ).toBe(true);
    expect(routed({ 'data.amount': { $gt: 100 } }, payment('USD', { amount: 99.5 }))).toBe(false);
  });

  it('$regex runs in linear time: a pattern that backtracks catastrophically in JavaScript matches and misses as written, on values up to the body limit', () => {
    const t = target('t', { filter: { 'data.payer_name': { $regex: '^([A-Za-z]+ ?)*$' } } });
    const routed = (name: string) =>
      route([t], 'remittance.incoming', { type: 'INCOMING_REMITTANCE', data: { payer_name: name } }, undefined).deliver
        .length === 1;
    expect(routed('Ada Lovelace')).toBe(true);
    expect(routed(`${'Ab'.repeat(20)}!`)).toBe(false); // JavaScript's engine: hours at 40 characters
    expect(routed(`${'a'.repeat(262_000)}!`)).toBe(false);
    expect(routed('x'.repeat(262_000))).toBe(true);
    // $options i, m, s as in JavaScript; a list's string items are tested, as sift's own $regex does
    const tags = (filter: Record<string, unknown>, list: string[]) =>
      route(
        [target('o', { filter: { 'data.tags': filter } })],
        'payment.result',
        payment('USD', { tags: list }),
        undefined,
      ).deliver.length;
    expect(tags({ $regex: '^b.c$', $options: 'ims' }, ['x', 'a\nB\nC'])).toBe(1);
    expect(tags({ $regex: '^b.c$', $options: 'ims' }, ['x', 'a\nB\nx'])).toBe(0);
    expect(tags({ $regex: '^b.c$' }, ['x', 'a\nB\nC'])).toBe(0);
    expect(tags({ $regex: '^b.c$' }, ['x', 'bxc'])).toBe(1);
  });
});

describe('filter validation', () => {
  it.each([
    [
      { 'data.currency': { $inn: ['USD'] } },
      '"data.currency": unknown operator $inn; did you mean $in? Valid here: $eq, $ne, $gt',
    ],
    [{ 'data.currency': { $in: 'USD' } }, '"data.currency": $in takes a list of values'],
    [
      { data: { currency: { $in: ['USD'] } } },
      'data.currency: $in inside a value that is compared as a whole would never apply; for a nested field use a dotted path',
    ],
    [{ $in: ['USD'] }, '(top level): $in needs a field before it'],
    [{ $or: { merchantId: 'A' } }, '(top level): $or takes a non-empty list of conditions'],
    [{ $or: [{ merchantId: { $exist: true } }] }, '$or[0].merchantId: unknown operator $exist; did you mean $exists?'],
    [
      { $where: 'this.data.amount > 1' },
      "(top level): $where is not supported: it would run the configuration's text as code",
    ],
    [
      { 'data.status': { $regex: '(' } },
      '"data.status": $regex "(" is refused: error parsing regexp: missing closing ): `(` (filters use RE2 syntax, which runs in linear time: no backreferences or lookaround)',
    ],
    [
      { 'data.payer_name': { $regex: '^(\\w+) \\1$' } },
      '"data.payer_name": $regex "^(\\\\w+) \\\\1$" is refused: error parsing regexp: invalid escape sequence: `\\1`',
    ],
    [
      { 'data.payer_name': { $regex: 'a(?=b)' } },
      '"data.payer_name": $regex "a(?=b)" is refused: error parsing regexp: invalid or unsupported Perl syntax: `(?=`',
    ],
    [
      { 'data.payer_name': { $regex: 'a', $options: 'x' } },
      '"data.payer_name": $options: unknown flag "x"; use i, m, s (g and u change nothing)',
    ],
    [{ 'data.status': { $type: 'date' } }, '"data.status": $type takes one of number, string, bool, array, null'],
    [{ 'data.status': { $in: ['A'], other: 1 } }, '"data.status": mixes operators with field names (other)'],
    [{ 'data.n': { $mod: [0, 1] } }, '"data.n": $mod takes [divisor, remainder] with a non-zero divisor'],
  ])('%j is refused: %s', (filter, message) => {
    const problems = filterProblems(filter);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.startsWith(message)).toBe(true);
  });

  it("the targets in the forwarding guide's examples load, and route as it says", () => {
    const readme = readFileSync(path.join(__dirname, '..', 'docs', 'forwarding.md'), 'utf8');
    const blocks = [...readme.matchAll(/```yaml\n([\s\S]*?)```/g)]
      .map((m) => parseYaml(m[1]!) as { targets?: unknown[] })
      .filter((b) => JSON.stringify(b?.targets ?? []).includes('filter'));
    expect(blocks).toHaveLength(3);
    const [subMerchants, currencies] = blocks.slice(1).map((b) => b.targets!.map((t) => targetSchema.parse(t)));
    const to = (ts: Target[], payload: unknown, merchantId?: string) =>
      names(route(ts, 'payment.result', payload, merchantId).deliver);
    expect(to(subMerchants!, payment('USD'), 'SUB-42')).toEqual(['sub-42-erp']);
    expect(to(subMerchants!, payment('USD'), 'SUB-7')).toEqual(['other-subs']);
    expect(to(subMerchants!, payment('USD'))).toEqual(['other-subs']);
    expect(to(currencies!, payment('GBP'))).toEqual(['eu-ledger']);
    expect(to(currencies!, payment('USD', { status: 'SUCCESS' }))).toEqual(['us-ledger']);
    expect(to(currencies!, payment('USD', { status: 'PROCESSING' }))).toEqual([]);
    expect(to(currencies!, payment('JPY'))).toEqual([]);
    const deployExample = readFileSync(path.join(__dirname, '..', 'deploy', 'config.yaml'), 'utf8').replace(
      /^  # (-|  )/gm,
      '  $1',
    );
    const deployTargets = (parseYaml(deployExample) as { targets: unknown[] }).targets.map((t) =>
      targetSchema.parse(t),
    );
    expect(to(deployTargets, payment('EUR'), 'SUB-42')).toEqual(['erp', 'sub-42-eu']);
  });
});

describe('a filter in the configuration file', () => {
  function problemsOf(yaml: string): { file: string; problems: string[] } {
    const file = path.join(tempDir('filter'), 'config.yaml');
    writeFileSync(file, yaml);
    try {
      loadConfig({ ...base, CONFIG_FILE: file });
    } catch (err) {
      if (err instanceof ConfigError) return { file, problems: err.problems };
      throw err;
    }
    throw new Error('expected a ConfigError');
  }

  it('when it is invalid, then start-up stops naming the target, the key as written and the file', () => {
    const { file, problems } = problemsOf(
      [
        'targets:',
        '  - { name: all, url: "http://127.0.0.1:1/x", events: ["*"] }',
        '  - name: eu-ledger',
        '    url: http://127.0.0.1:1/y',
        '    events: [payment.result]',
        '    filter: { "data.currency": { $inn: [EUR] } }',
      ].join('\n'),
    );
    expect(problems).toEqual([
      expect.stringMatching(
        new RegExp(
          `^targets\\.1\\.filter: target "eu-ledger": "data\\.currency": unknown operator \\$inn; did you mean \\$in\\?.* \\(in ${file.replace(/[.]/g, '\\.')}\\)$`,
        ),
      ),
    ]);
  });

  it('when it is invalid, then the service process exits 78 with the problem on stderr', async () => {
    const { spawn } = await import('node:child_process');
    const file = path.join(tempDir('filter'), 'config.yaml');
    writeFileSync(
      file,
      'targets:\n  - { name: sub-42, url: "http://127.0.0.1:1/x", events: ["*"], filter: { merchantId: { $regex: "SUB-(4" } } }\n',
    );
    const child = spawn(process.execPath, ['-r', 'ts-node/register', path.resolve(__dirname, '../src/main.ts')], {
      env: { ...process.env, TS_NODE_SWC: 'true', ...base, CONFIG_FILE: file },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    expect(await new Promise<number | null>((resolve) => child.once('exit', resolve))).toBe(78);
    expect(stderr).toBe(
      [
        'invalid configuration:',
        `  - targets.0.filter: target "sub-42": merchantId: $regex "SUB-(4" is refused: error parsing regexp: missing closing ): \`SUB-(4\` (filters use RE2 syntax, which runs in linear time: no backreferences or lookaround) (in ${file})`,
        '',
      ].join('\n'),
    );
  }, 30000);

  it('when it is not a mapping, then start-up stops and says so', () => {
    const { problems } = problemsOf(
      'targets:\n  - { name: a, url: "http://127.0.0.1:1/x", events: ["*"], filter: [USD] }\n',
    );
    expect(problems).toEqual([
      expect.stringMatching(
        /^targets\.0\.filter: must be a mapping of fields to conditions, e\.g\. \{ "data\.currency": \{ \$in: \[USD, EUR\] \} \} \(in /,
      ),
    ]);
  });

  it('when it is valid, then it is kept as written (YAML lists and plain words included)', () => {
    const file = path.join(tempDir('filter'), 'config.yaml');
    writeFileSync(
      file,
      'targets:\n  - { name: a, url: "http://127.0.0.1:1/x", events: ["*"], filter: { "data.currency": { $in: [USD, EUR] }, merchantId: SUB-42 } }\n',
    );
    expect(loadConfig({ ...base, CONFIG_FILE: file }).targets[0]!.filter).toEqual({
      'data.currency': { $in: ['USD', 'EUR'] },
      merchantId: 'SUB-42',
    });
  });
});
