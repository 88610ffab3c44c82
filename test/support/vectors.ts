import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

export interface SignatureVector {
  name: string;
  scheme: 'current' | 'legacy-v1.2';
  now_ms: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  string_to_sign: string;
  expect: 'valid' | 'invalid:signature' | 'invalid:timestamp' | 'invalid:header';
  merchant_id?: string;
}

export interface VectorFile {
  now_ms: number;
  merchant_id: string;
  keys: {
    platform_key_a_spki_base64: string;
    platform_key_a_pem: string;
    platform_key_a_certificate_pem: string;
    platform_key_b_spki_base64: string;
  };
  vectors: SignatureVector[];
}

const SHARED = path.resolve(__dirname, '../../../shared/vectors/signatures.json');
const SNAPSHOT = path.resolve(__dirname, '../fixtures/signatures.json');

/**
 * The independent vectors from ../shared/vectors beside this repository; a clone without shared/
 * beside it falls back to the snapshot in test/fixtures.
 */
export function loadVectors(): VectorFile {
  const file = existsSync(SHARED) ? SHARED : SNAPSHOT;
  return JSON.parse(readFileSync(file, 'utf8')) as VectorFile;
}
