import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import helmet from 'helmet';

/**
 * The headers helmet sets, captured once at start. Helmet's headers do not depend on the request,
 * so the notify paths send this fixed set in one write instead of running the middleware each time.
 */
export function helmetHeaders(): Record<string, string> {
  // A response that is never sent: helmet only sets and removes headers on it.
  const req = new IncomingMessage(new Socket());
  const res = new ServerResponse(req);
  let done = false;
  helmet()(req, res, () => {
    done = true;
  });
  if (!done) throw new Error('helmet did not finish synchronously; its headers cannot be captured');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.getHeaders())) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return headers;
}
