import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Pool } from 'pg';
import { ServiceError } from '../model/errors';
import { SCHEMA } from './migrations';
import { deliveriesOf, selectRows, type ArchivedDelivery, type ArchivedNotification } from './rows';
import { signedBytesOf } from './signed-bytes';

export class ArchivedNotFound extends ServiceError {
  readonly code = 'not_found';
  readonly status = 404;
  constructor(id: string) {
    super(`nothing in the archive has event id or request_id ${id}`);
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

/** The files of one notification's evidence, as `archive export` writes them and the console offers them. */
export const EVIDENCE_FILES = [
  'README',
  'signed.txt',
  'signature.bin',
  'public-key.pem',
  'body',
  'evidence.json',
] as const;
export type EvidenceFile = (typeof EVIDENCE_FILES)[number];

export interface EvidenceFiles {
  row: ArchivedNotification;
  files: Record<EvidenceFile, Buffer>;
}

const LEGACY_SCHEME = 'Scheme: legacy v1.2 (signed.txt is merchantId=<id>&timestamp=<ms>&requestBody=<body>).';
const CURRENT_SCHEME = 'Scheme: current (signed.txt is the five lines: method, path, timestamp, nonce, body).';

const README = (row: ArchivedNotification) => `Evidence of one notification from the platform, as received.

${row.scheme === 'legacy' ? LEGACY_SCHEME : CURRENT_SCHEME}
Event ${row.eventId} (${row.eventType}), request_id ${row.requestId ?? '(none)'},
received ${row.receivedAt.toISOString()}.

Check the platform's signature over the exact bytes it signed, with its public key:

  openssl dgst -sha256 -verify public-key.pem -signature signature.bin signed.txt

It prints "Verified OK". public-key.pem's SHA-256 fingerprint (of its DER form) is ${row.keyFingerprint};
compare it with the key the platform published for the ${row.environment} environment. body is the raw body;
evidence.json holds the row's other facts, its place in the archive's hash chain and the delivery outcomes.
`;

/** The notification an event id or request_id names (its first receipt), with its key and delivery outcomes. */
export async function evidenceOf(pool: Pool, id: string): Promise<EvidenceFiles> {
  const [row] = await selectRows(pool, 'event_id = $1 OR request_id = $1', [id], 1);
  if (!row) throw new ArchivedNotFound(id);
  const key = await pool.query<{ pem: string }>(`SELECT pem FROM ${SCHEMA}.keys WHERE fingerprint = $1`, [
    row.keyFingerprint,
  ]);
  const bytes = signedBytesOf(row);
  const pem = key.rows[0]?.pem;
  if (!bytes || pem === undefined)
    throw new Error(`archive row ${row.id} lacks ${pem === undefined ? 'its key' : 'its signature headers'}`);
  const deliveries = (await deliveriesOf(pool, [row.eventId])).get(row.eventId) ?? [];
  return {
    row,
    files: {
      'signed.txt': bytes.signed,
      'signature.bin': bytes.signature,
      'public-key.pem': Buffer.from(pem),
      body: row.body,
      'evidence.json': Buffer.from(`${JSON.stringify(evidenceJson(row, deliveries), null, 2)}\n`),
      README: Buffer.from(README(row)),
    },
  };
}

/** Writes the evidence files into `dir` (created when missing); returns their paths. */
export async function exportEvidence(
  pool: Pool,
  id: string,
  dir: string,
): Promise<{ row: ArchivedNotification; paths: string[] }> {
  const { row, files } = await evidenceOf(pool, id);
  mkdirSync(dir, { recursive: true });
  const paths = Object.entries(files).map(([name, content]) => {
    const file = path.join(dir, name);
    writeFileSync(file, content);
    return file;
  });
  return { row, paths };
}

/** A row's facts for people and programs: everything but the bytes, which sit beside it as files. */
export function evidenceJson(row: ArchivedNotification, deliveries: readonly ArchivedDelivery[]) {
  return {
    archiveId: row.id,
    eventId: row.eventId,
    eventType: row.eventType,
    requestId: row.requestId,
    environment: row.environment,
    scheme: row.scheme,
    path: row.path,
    headers: row.headers,
    receivedAt: row.receivedAt.toISOString(),
    outcome: row.outcome,
    reason: row.reason,
    keyFingerprint: row.keyFingerprint,
    receipts: row.receipts,
    lastSeen: row.lastSeen.toISOString(),
    archivedAt: row.archivedAt.toISOString(),
    chain: {
      month: row.month.slice(0, 7),
      seq: row.seq,
      prevHash: row.prevHash.toString('hex'),
      rowHash: row.rowHash.toString('hex'),
    },
    deliveries,
  };
}
