import { readFileSync } from 'node:fs';
import type { Target } from '../model/target-schema';
import type { TransformCode } from './sandbox';

/** `transform: file:<path>` names a file (relative to the working directory); anything else is the source itself. */
export function transformFileOf(transform: string): string | undefined {
  return transform.startsWith('file:') ? transform.slice('file:'.length) : undefined;
}

/** Reads a transform's file; throws with the path and the reason. */
export function readTransformFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(
      `cannot read transform file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

/**
 * A target's transform as it runs: the text the configuration loader read (a file's, when it names
 * one, so that a reload sees an edited file), or, for a target built without the loader, read now.
 */
export function transformCodeOf(target: Pick<Target, 'name' | 'transform' | 'transformSource'>): TransformCode {
  if (target.transformSource) return { source: target.transformSource.text, file: target.transformSource.file };
  const transform = target.transform ?? '';
  const file = transformFileOf(transform);
  return file ? { source: readTransformFile(file), file } : { source: transform, file: `inline:${target.name}` };
}
