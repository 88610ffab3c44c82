import type { Target } from '../model/target-schema';
import {
  DEFAULT_TRANSFORM_MAX_BYTES,
  startSandbox,
  TransformError,
  type TransformInput,
  type TransformLimits,
} from './sandbox';
import { transformCodeOf } from './source';

/** The time limit of a target's transform. @defaultValue 50 ms */
export const DEFAULT_TRANSFORM_TIMEOUT_MS = 50;

export function transformLimitsOf(target: Pick<Target, 'transformTimeoutMs' | 'transformMaxBytes'>): TransformLimits {
  return {
    timeoutMs: target.transformTimeoutMs ?? DEFAULT_TRANSFORM_TIMEOUT_MS,
    maxBytes: target.transformMaxBytes ?? DEFAULT_TRANSFORM_MAX_BYTES,
  };
}

/**
 * Compiles every target's transform (each in its own sandbox thread, all at once) and says which do
 * not compile, naming the target, the file and the line, as configuration problems are named.
 */
export async function transformProblems(targets: readonly Target[]): Promise<string[]> {
  const found = await Promise.all(
    targets.map(async (target, i) => {
      if (target.transform === undefined) return undefined;
      const where = `targets.${i}.transform: target "${target.name}"`;
      let code;
      try {
        code = transformCodeOf(target);
      } catch (err) {
        return `${where}: ${(err as Error).message}`;
      }
      const sandbox = startSandbox(code, transformLimitsOf(target));
      try {
        const fault = await sandbox.compiled();
        if (!fault) return undefined;
        const problem = fault.kind === 'timeout' ? 'does not compile in time' : 'does not compile';
        return `${where}: the transform ${problem}: ${new TransformError(fault, code.file).message}`;
      } finally {
        await sandbox.close();
      }
    }),
  );
  return found.filter((p): p is string => p !== undefined);
}

/**
 * Runs a target's transform on each input, in a sandbox of its own started for the purpose (config
 * check, transform test): what it would send, or the error.
 */
export async function tryTransform(
  target: Target,
  inputs: readonly TransformInput[],
): Promise<({ body: string | null } | { error: string })[]> {
  let sandbox;
  let code;
  try {
    code = transformCodeOf(target);
    sandbox = startSandbox(code, transformLimitsOf(target));
  } catch (err) {
    return inputs.map(() => ({ error: (err as Error).message }));
  }
  try {
    // Compiled once: a transform that does not compile (or not in time) gives that error for every input.
    const fault = await sandbox.compiled();
    if (fault) return inputs.map(() => ({ error: new TransformError(fault, code.file).message }));
    const results: ({ body: string | null } | { error: string })[] = [];
    for (const input of inputs) {
      try {
        results.push({ body: await sandbox.run(input) });
      } catch (err) {
        if (!(err instanceof TransformError)) throw err;
        results.push({ error: err.message });
      }
    }
    return results;
  } finally {
    await sandbox.close();
  }
}
