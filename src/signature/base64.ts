/**
 * Decodes a signature header to its bytes, or `undefined` when it is not canonical.
 *
 * Canonical means: after exactly one URL-decode, standard-alphabet Base64 with its padding and zero
 * pad bits. Node's decoder is lenient (URL-safe letters, missing padding, stray characters, non-zero
 * pad bits all decode), so one signature could be written many ways; a replay key taken from the
 * text would then differ per spelling. Requiring the text to equal the canonical encoding
 * of its own bytes leaves exactly one spelling of the Base64 (the URL-encoding of it may still vary,
 * e.g. `%2B`, `%2b` or a plain `+`: those all decode to the same text).
 */
export function decodeSignatureHeader(header: string): Buffer | undefined {
  let base64: string;
  try {
    base64 = decodeURIComponent(header);
  } catch {
    return undefined;
  }
  if (base64.length === 0 || base64.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(base64, 'base64');
  return bytes.toString('base64') === base64 ? bytes : undefined;
}
