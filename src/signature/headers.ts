export type HeaderBag = Record<string, string | string[] | undefined>;

/** A header's single value; a repeated header is treated as malformed by callers (undefined here). */
export function headerValue(headers: HeaderBag, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
}

export function isRepeated(headers: HeaderBag, name: string): boolean {
  return Array.isArray(headers[name]);
}
