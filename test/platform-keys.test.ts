import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from '../src/config/errors';
import { loadPlatformKeys } from '../src/config/keys';
import { loadVectors } from './support/vectors';

const { keys } = loadVectors();
// The vectors' certificate for key A is valid from 2026-01-01 to 2035-12-30.
const CERT_VALID = Date.UTC(2030, 0, 1);
const CERT_EXPIRED = Date.UTC(2036, 0, 1);
const CERT_NOT_YET = Date.UTC(2025, 0, 1);

function problemsOf(load: () => unknown): string[] {
  try {
    load();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

function spkiBase64(bits: number): string {
  return generateKeyPairSync('rsa', { modulusLength: bits })
    .publicKey.export({ type: 'spki', format: 'der' })
    .toString('base64');
}

describe('platform key strength', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'weak-keys-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('when a key has fewer than 2048 bits, then start-up stops with a problem naming each weak entry', () => {
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
    const file = path.join(dir, 'weak.pem');
    writeFileSync(file, weak.export({ type: 'spki', format: 'pem' }));
    const problems = problemsOf(() =>
      loadPlatformKeys([
        keys.platform_key_a_spki_base64,
        weak.export({ type: 'spki', format: 'der' }).toString('base64'),
        `file:${file}`,
      ]),
    );
    expect(problems).toEqual([
      'platformPublicKeys[1]: is a 1024-bit RSA key; at least 2048 bits are required',
      `${file} (PEM block 1): is a 1024-bit RSA key; at least 2048 bits are required`,
    ]);
  });

  it('when keys have 2048 or more bits, then they load', () => {
    expect(
      loadPlatformKeys([spkiBase64(2048), spkiBase64(3072)]).map((k) => k.asymmetricKeyDetails?.modulusLength),
    ).toEqual([2048, 3072]);
  });
});

describe('platform key certificates at start', () => {
  function warningsAt(nowMs: number): [string, Record<string, unknown>][] {
    const warnings: [string, Record<string, unknown>][] = [];
    const loaded = loadPlatformKeys([keys.platform_key_a_certificate_pem, keys.platform_key_b_spki_base64], {
      clock: () => nowMs,
      warn: (m, f) => warnings.push([m, f]),
    });
    expect(loaded).toHaveLength(2);
    return warnings;
  }

  it('when the certificate has expired, then it warns once, naming the entry and the date, and still uses the key', () => {
    expect(warningsAt(CERT_EXPIRED)).toEqual([
      [
        'platform key certificate has expired; its key is still used: ask the platform for the current one',
        { source: 'platformPublicKeys[0] (PEM block 1)', notAfter: '2035-12-30T00:00:00.000Z' },
      ],
    ]);
  });

  it('when the certificate is not valid yet, then it warns once', () => {
    expect(warningsAt(CERT_NOT_YET)).toEqual([
      [
        'platform key certificate is not valid yet; its key is used already',
        { source: 'platformPublicKeys[0] (PEM block 1)', notBefore: '2026-01-01T00:00:00.000Z' },
      ],
    ]);
  });

  it('when the certificate is within its validity, then nothing is said', () => {
    expect(warningsAt(CERT_VALID)).toEqual([]);
  });
});
