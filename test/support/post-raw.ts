import type { RequestListener } from 'node:http';
import request from 'supertest';

/** POSTs the exact bytes given (supertest would otherwise JSON-encode a Buffer), to an app or a base URL. */
export function postRaw(
  app: RequestListener | string,
  target: string,
  headers: Record<string, string>,
  body: Buffer | string,
) {
  return request(app)
    .post(target)
    .set(headers)
    .serialize((b: unknown) => b as string)
    .send(typeof body === 'string' ? Buffer.from(body, 'utf8') : (body as unknown as string));
}
