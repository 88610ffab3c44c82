import { writeFileSync } from 'node:fs';
import type { LoadResult, LoadSpec } from './load-protocol';
import { writeRequestsFile, type PresignedRequest } from './presign';
import { forkBench, stopChild, waitForMessage } from './processes';
import type { Workdir } from './workdir';

/** A LoadSpec of either mode, minus the file this module writes. */
type WithoutFile<S> = S extends LoadSpec ? Omit<S, 'requestsFile'> : never;
type SpecWithoutFile = WithoutFile<LoadSpec>;

let runs = 0;

/**
 * Hands presigned requests to a fresh load-generator process (through a file, since a large request
 * list is slow over IPC) and waits for its result. The bound is the run's own timing plus margin.
 */
export async function runLoad(
  workdir: Workdir,
  spec: SpecWithoutFile,
  requests: readonly PresignedRequest[],
): Promise<LoadResult> {
  const id = ++runs;
  const requestsFile = workdir.file(`requests-${id}.json`);
  const specFile = workdir.file(`load-${id}.json`);
  writeRequestsFile(requestsFile, requests);
  const full = { ...spec, requestsFile } as LoadSpec;
  writeFileSync(specFile, JSON.stringify(full));
  const expectedMs = full.mode === 'paced' ? (requests.length / full.rate) * 1000 : requests.length * 5;
  const child = forkBench('harness/load-child', [specFile], {}, ['--max-old-space-size=2048']);
  try {
    return await waitForMessage<LoadResult>(child, 'result', expectedMs + full.timeoutSec * 1000 + 60_000);
  } finally {
    await stopChild(child, 5000);
  }
}
