import { z } from 'zod';
import { nearest } from '../model/nearest';

export interface UnknownKey {
  /** Where the key sits, e.g. `['targets', 0, 'evnts']`. */
  path: (string | number)[];
  /** The valid key it most likely means, if any is close. */
  suggestion?: string;
}

/** The schema a value is checked against once optional, default, pipe and similar wrappers are peeled off. */
function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (let i = 0; i < 20; i++) {
    if (
      s instanceof z.ZodOptional ||
      s instanceof z.ZodNullable ||
      s instanceof z.ZodDefault ||
      s instanceof z.ZodPrefault ||
      s instanceof z.ZodReadonly ||
      s instanceof z.ZodNonOptional ||
      s instanceof z.ZodCatch
    )
      s = s.unwrap() as z.ZodType;
    else if (s instanceof z.ZodPipe) s = s.in as z.ZodType;
    else if (s instanceof z.ZodLazy) s = s.unwrap() as z.ZodType;
    else return s;
  }
  return s;
}

/** The keys an object schema (or a union of object schemas) accepts; undefined when it accepts any key. */
function shapeOf(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  if (schema instanceof z.ZodObject) {
    const catchall = schema.def.catchall;
    if (catchall && !(catchall instanceof z.ZodNever)) return undefined;
    return schema.shape as Record<string, z.ZodType>;
  }
  if (schema instanceof z.ZodUnion || schema instanceof z.ZodDiscriminatedUnion) {
    const shapes = (schema.options as z.ZodType[]).map((o) => shapeOf(unwrap(o)));
    if (shapes.some((s) => s === undefined)) return undefined;
    return Object.assign({}, ...shapes) as Record<string, z.ZodType>;
  }
  if (schema instanceof z.ZodIntersection) {
    const left = shapeOf(unwrap(schema.def.left as z.ZodType));
    const right = shapeOf(unwrap(schema.def.right as z.ZodType));
    return left && right ? { ...left, ...right } : undefined;
  }
  return undefined;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Every key of `value` that `schema` does not know, at any depth (settings, targets, nested objects),
 * with the nearest valid name. The valid names come from the schema itself, so a setting added to the
 * schema is accepted here without a second list to keep in step.
 */
export function findUnknownKeys(schema: z.ZodType, value: unknown, path: (string | number)[] = []): UnknownKey[] {
  const s = unwrap(schema);
  if (Array.isArray(value) && s instanceof z.ZodArray) {
    return value.flatMap((item, i) => findUnknownKeys(s.element as z.ZodType, item, [...path, i]));
  }
  if (!isPlainObject(value)) return [];
  if (s instanceof z.ZodRecord) {
    return Object.entries(value).flatMap(([k, v]) => findUnknownKeys(s.valueType as z.ZodType, v, [...path, k]));
  }
  const shape = shapeOf(s);
  if (!shape) return [];
  return Object.entries(value).flatMap(([key, v]) => {
    const known = shape[key];
    if (known) return findUnknownKeys(known, v, [...path, key]);
    const suggestion = nearest(key, Object.keys(shape));
    return [{ path: [...path, key], ...(suggestion ? { suggestion } : {}) }];
  });
}
