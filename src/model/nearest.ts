/** Edit distance (insertions, deletions, substitutions), for "did you mean" suggestions. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * The candidate closest to `word`, ignoring case, `_` and `-` (so `REDIS_URL` finds `redisUrl`), when it
 * is close enough to be a likely typo: by default at most a third of the word's length apart (and at
 * least 2).
 */
export function nearest(
  word: string,
  candidates: Iterable<string>,
  limit = Math.max(2, Math.floor(word.length / 3)),
): string | undefined {
  const fold = (s: string) => s.toLowerCase().replace(/[_-]/g, '');
  let best: { name: string; distance: number } | undefined;
  for (const name of candidates) {
    const distance = editDistance(fold(word), fold(name));
    if (distance <= limit && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}
