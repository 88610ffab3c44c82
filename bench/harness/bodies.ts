import { randomBytes } from 'node:crypto';
import type { EventType } from '../../src/model/event-table';
import { sampleBody } from '../../src/signing/samples';

const RUN_TAG = randomBytes(4).toString('hex');
let counter = 0;

/**
 * A sample notification body whose `data.request_id` is unique by construction (run tag and a
 * counter): the sink recognises deliveries by it, and sampleBody's own random part can collide
 * once in a few hundred thousand bodies made in the same millisecond.
 */
export function uniqueSampleBody(type: EventType): { body: string; requestId: string } {
  const parsed = JSON.parse(sampleBody(type)) as { data: Record<string, unknown> };
  const requestId = `REQ${RUN_TAG}${(++counter).toString(36)}`;
  parsed.data.request_id = requestId;
  return { body: JSON.stringify(parsed), requestId };
}
