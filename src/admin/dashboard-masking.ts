type Mask = (value: unknown) => unknown;

/**
 * What the dashboard shows of a job's data: the payload with sensitive fields masked (the admin
 * API's masker), and the raw body, a string of JSON, re-rendered with the same fields masked; a
 * body that is not JSON cannot be masked field by field, so only its size is shown.
 */
export function dashboardJobData(mask: Mask): (data: unknown) => unknown {
  return (data) => {
    const masked = mask(data);
    if (typeof masked !== 'object' || masked === null || Array.isArray(masked)) return masked;
    const job = masked as { rawBody?: unknown; rawBodyEncoding?: unknown };
    if (typeof job.rawBody !== 'string') return masked;
    return { ...job, rawBody: maskRawBody(mask, job.rawBody, job.rawBodyEncoding === 'base64' ? 'base64' : 'utf8') };
  };
}

function maskRawBody(mask: Mask, text: string, encoding: 'utf8' | 'base64'): string {
  const bytes = Buffer.byteLength(text, encoding);
  if (encoding === 'utf8') {
    try {
      return JSON.stringify(mask(JSON.parse(text)));
    } catch {
      // not JSON: fall through to the size note
    }
  }
  return `(${bytes} bytes, not JSON: hidden; the quarantine API lists its errors)`;
}
