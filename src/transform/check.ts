import type { Target } from '../model/target-schema';
import { startSandbox, TransformError, type TransformInput } from './sandbox';
import { transformCodeOf } from './source';

/** The time limit of a target's transform. @defaultValue 50 ms */
export const DEFAULT_TRANSFORM_TIMEOUT_MS = 50;

export function transformTimeoutOf(target: Pick<Target, 'transformTimeoutMs'>): number {
  return target.transformTimeoutMs ?? DEFAULT_TRANSFORM_TIMEOUT_MS;
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
      const sandbox = startSandbox(code, transformTimeoutOf(target));
      try {
        const fault = await sandbox.compiled();
        return fault
          ? `${where}: the transform does not compile: ${new TransformError(fault, code.file).message}`
          : undefined;
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
  try {
    sandbox = startSandbox(transformCodeOf(target), transformTimeoutOf(target));
  } catch (err) {
    return inputs.map(() => ({ error: (err as Error).message }));
  }
  try {
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
