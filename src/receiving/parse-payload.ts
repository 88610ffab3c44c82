import type { EventDefinition } from '../events/table';

export type ParsedPayload = { ok: true; payload: unknown } | { ok: false; errors: string[] };

/** JSON-parses a verified body and checks it against its event's schema. */
export function parsePayload(definition: EventDefinition, text: string): ParsedPayload {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { ok: false, errors: [`body is not JSON: ${(err as Error).message}`] };
  }
  const result = definition.schema.safeParse(json);
  if (result.success) return { ok: true, payload: result.data };
  return { ok: false, errors: result.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`) };
}
