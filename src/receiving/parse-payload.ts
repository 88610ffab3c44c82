import type { EventDefinition } from '../events/table';

export type ParsedPayload = { ok: true; payload: unknown } | { ok: false; errors: string[] };

/** JSON-parses a verified body and checks it against its event's schema. */
export function parsePayload(definition: EventDefinition, text: string): ParsedPayload {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    // V8's message quotes the body; keep only the position so no payload text reaches the logs.
    const position = /position (\d+)/.exec((err as Error).message)?.[1];
    return { ok: false, errors: [`body is not JSON${position ? ` (at position ${position})` : ''}`] };
  }
  const result = definition.schema.safeParse(json);
  if (result.success) return { ok: true, payload: result.data };
  return { ok: false, errors: result.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`) };
}
