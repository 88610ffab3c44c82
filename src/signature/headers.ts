export type HeaderBag = Record<string, string | string[] | undefined>;

/**
 * A header's value. Node joins a repeated header into one comma-separated string, which then fails
 * its own format check (digits, Base64), so a repeated signature header is refused, never merged.
 */
export function headerValue(headers: HeaderBag, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
}
