import type { Target } from '../model/target-schema';
import { readTransformFile, transformFileOf } from '../transform/source';

/**
 * Reads the file of every `transform: file:<path>` into its target (`transformSource`), once per load,
 * so the workers run the text that start-up or the reload checked, and an edited file makes the
 * target a changed one on reload. Returns the files that cannot be read, by target index.
 */
export function readTransformSources(targets: Target[]): { index: number; message: string }[] {
  const problems: { index: number; message: string }[] = [];
  targets.forEach((target, index) => {
    const file = target.transform === undefined ? undefined : transformFileOf(target.transform);
    if (file === undefined) return;
    try {
      target.transformSource = { text: readTransformFile(file), file };
    } catch (err) {
      problems.push({ index, message: `target "${target.name}": ${(err as Error).message}` });
    }
  });
  return problems;
}
