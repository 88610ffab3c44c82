const MASK = '***';

/**
 * Returns a copy of a parsed payload in which every value under a sensitive field name (compared
 * case-insensitively, at any depth) is replaced, so a body can be logged without account numbers,
 * names or addresses.
 */
export function createMasker(fields: readonly string[]): (value: unknown) => unknown {
  const sensitive = new Set(fields.map((f) => f.toLowerCase()));
  const mask = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(mask);
    if (typeof value !== 'object' || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = sensitive.has(k.toLowerCase()) ? MASK : mask(v);
    return out;
  };
  return mask;
}
