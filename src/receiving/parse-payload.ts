import type { EventDefinition } from '../model/event-table';
import { duplicateKeyIn } from './json-duplicates';
import { MAX_JSON_DEPTH, membersUnlessDeeperThan } from './json-depth';

export type ParsedPayload = { ok: true; payload: unknown } | { ok: false; errors: string[] };

/**
 * JSON-parses a verified body and checks it against its event's schema; a body nested deeper than
 * MAX_JSON_DEPTH is not parsed, and one holding a key twice in an object is refused (the checks would
 * judge the last copy, the target may read the first). `confirm` checks the parsed
 * JSON against what verification relied on (the legacy body timestamp) and returns a problem or
 * `undefined`.
 */
export function parsePayload(
  definition: EventDefinition,
  text: string,
  confirm?: (json: unknown) => string | undefined,
): ParsedPayload {
  const members = membersUnlessDeeperThan(text, MAX_JSON_DEPTH);
  if (members < 0) return { ok: false, errors: [`body nests deeper than ${MAX_JSON_DEPTH} levels`] };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    // V8's message quotes the body; keep only the position so no payload text reaches the logs.
    const position = /position (\d+)/.exec((err as Error).message)?.[1];
    return { ok: false, errors: [`body is not JSON${position ? ` (at position ${position})` : ''}`] };
  }
  const duplicate = duplicateKeyIn(text, json, members);
  if (duplicate !== undefined) return { ok: false, errors: [`duplicate key ${JSON.stringify(duplicate)}`] };
  const mismatch = confirm?.(json);
  if (mismatch !== undefined) return { ok: false, errors: [mismatch] };
  const result = definition.schema.safeParse(json);
  if (result.success) return { ok: true, payload: result.data };
  return { ok: false, errors: result.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`) };
}
