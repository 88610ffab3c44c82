import { z } from 'zod';

export type JsonSchema = Record<string, unknown>;

/**
 * The JSON Schema (draft 2020-12, OpenAPI 3.1's dialect) of a zod schema, as zod itself writes it.
 * The `$schema` line is dropped: inside an OpenAPI 3.1 document the dialect is the document's own.
 */
export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input', target: 'draft-2020-12' }) as JsonSchema;
  return rest;
}
