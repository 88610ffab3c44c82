import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';

/**
 * The headers helmet sets, captured once at start. Helmet's headers do not depend on the request,
 * so the notify paths send this fixed set in one write instead of running the middleware each time.
 */
export function helmetHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  const res = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
    },
    removeHeader(name: string) {
      delete headers[name.toLowerCase()];
    },
  } as unknown as ServerResponse;
  let done = false;
  helmet()({} as IncomingMessage, res, () => {
    done = true;
  });
  if (!done) throw new Error('helmet did not finish synchronously; its headers cannot be captured');
  return headers;
}
