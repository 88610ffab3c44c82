/** A time as operators type it: ISO 8601 or epoch milliseconds. NaN when it is neither. */
export function parseOperatorTime(text: string): number {
  return /^\d+$/.test(text) ? Number(text) : Date.parse(text);
}
