import {
  $all,
  $and,
  $elemMatch,
  $eq,
  $exists,
  $gt,
  $gte,
  $in,
  $lt,
  $lte,
  $mod,
  $ne,
  $nin,
  $nor,
  $not,
  $options,
  $or,
  $size,
  $type,
  createQueryTester,
} from 'sift';
import { nearest } from './nearest';
import { $linearRegex, compileLinearRegex } from './linear-regex';

/** A target's `filter`: a MongoDB-syntax query over the platform's body plus `merchantId`. */
export type EventFilter = Record<string, unknown>;
export type FilterTest = (document: Record<string, unknown>) => boolean;

/**
 * sift's operators minus `$where`, which would run the configuration's text as code. Given to sift
 * explicitly, so an operator missing here is refused by sift as well as by {@link filterProblems}.
 * `$regex` runs on RE2's linear-time engine instead of JavaScript's backtracking one (see
 * linear-regex.ts), for every user of this compiler.
 */
const FIELD_OPERATORS = {
  $eq,
  $ne,
  $gt,
  $gte,
  $lt,
  $lte,
  $in,
  $nin,
  $all,
  $exists,
  $regex: $linearRegex,
  $options,
  $not,
  $elemMatch,
  $size,
  $type,
  $mod,
};
const LOGICAL_OPERATORS = { $and, $or, $nor };
const OPERATIONS = { ...FIELD_OPERATORS, ...LOGICAL_OPERATORS };
const FIELD_NAMES = Object.keys(FIELD_OPERATORS);
const LOGICAL_NAMES = Object.keys(LOGICAL_OPERATORS);
/** sift's `$type` aliases that a JSON value can have. */
const TYPE_NAMES = ['number', 'string', 'bool', 'array', 'null'];

type Segment = string | number;

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `$or[0]."data.currency"`: a place in the filter, keys with dots quoted, as the operator wrote them. */
function where(at: Segment[]): string {
  if (at.length === 0) return '(top level)';
  return at
    .map((s, i) =>
      typeof s === 'number' ? `[${s}]` : `${i > 0 ? '.' : ''}${/^[\w$-]+$/.test(s) ? s : JSON.stringify(s)}`,
    )
    .join('');
}

function problem(at: Segment[], text: string): string[] {
  return [`${where(at)}: ${text}`];
}

function unknownOperator(op: string, valid: string[], at: Segment[]): string[] {
  if (op === '$where') return problem(at, "$where is not supported: it would run the configuration's text as code");
  const suggestion = nearest(op, valid);
  return problem(
    at,
    `unknown operator ${op}${suggestion ? `; did you mean ${suggestion}?` : ''} Valid here: ${valid.join(', ')}`,
  );
}

/** An exact-match value holding `$` keys is compared literally, so it never matches what its author meant. */
function literalProblems(value: unknown, at: Segment[]): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => literalProblems(v, [...at, i]));
  if (!isMapping(value)) return [];
  const op = Object.keys(value).find((k) => k.startsWith('$'));
  if (op)
    return problem(
      at,
      `${op} inside a value that is compared as a whole would never apply; for a nested field use a dotted path, ` +
        `e.g. "data.currency": { $in: [USD] }`,
    );
  return Object.entries(value).flatMap(([k, v]) => literalProblems(v, [...at, k]));
}

function queryProblems(query: unknown, at: Segment[]): string[] {
  if (!isMapping(query)) return problem(at, 'must be a mapping of fields to conditions');
  return Object.entries(query).flatMap(([key, value]) => {
    if (!key.startsWith('$')) return conditionProblems(value, [...at, key]);
    if (FIELD_NAMES.includes(key))
      return problem(at, `${key} needs a field before it, e.g. "data.status": { ${key}: … }`);
    if (!LOGICAL_NAMES.includes(key)) return unknownOperator(key, LOGICAL_NAMES, at);
    if (!Array.isArray(value) || value.length === 0) return problem(at, `${key} takes a non-empty list of conditions`);
    return value.flatMap((q, i) => queryProblems(q, [...at, key, i]));
  });
}

/** A field's condition: a value to equal, or a mapping of operators. */
function conditionProblems(condition: unknown, at: Segment[]): string[] {
  if (!isMapping(condition) || !Object.keys(condition).some((k) => k.startsWith('$')))
    return literalProblems(condition, at);
  const fields = Object.keys(condition).filter((k) => !k.startsWith('$'));
  if (fields.length)
    return problem(
      at,
      `mixes operators with field names (${fields.join(', ')}); give either operators or a whole value`,
    );
  return Object.entries(condition).flatMap(([op, arg]) => operatorProblems(op, arg, condition, at));
}

function operatorProblems(op: string, arg: unknown, siblings: Record<string, unknown>, at: Segment[]): string[] {
  const fail = (expected: string) => problem(at, `${op} takes ${expected}`);
  switch (op) {
    case '$eq':
    case '$ne':
      return literalProblems(arg, at);
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return typeof arg === 'number' || typeof arg === 'string' ? [] : fail('a number or a string');
    case '$in':
    case '$nin':
    case '$all':
      return Array.isArray(arg) ? literalProblems(arg, at) : fail('a list of values');
    case '$exists':
      return typeof arg === 'boolean' ? [] : fail('true or false');
    case '$size':
      return Number.isInteger(arg) && (arg as number) >= 0 ? [] : fail('a whole number');
    case '$type':
      return typeof arg === 'string' && TYPE_NAMES.includes(arg) ? [] : fail(`one of ${TYPE_NAMES.join(', ')}`);
    case '$mod':
      return Array.isArray(arg) && arg.length === 2 && arg.every((n) => typeof n === 'number') && arg[0] !== 0
        ? []
        : fail('[divisor, remainder] with a non-zero divisor');
    case '$options':
      return '$regex' in siblings && typeof arg === 'string' ? [] : fail('a string of flags, beside $regex');
    case '$regex':
      if (typeof arg !== 'string') return fail('a regular expression, as a string');
      try {
        compileLinearRegex(arg, typeof siblings.$options === 'string' ? siblings.$options : undefined);
        return [];
      } catch (err) {
        return problem(at, (err as Error).message);
      }
    case '$not':
      return isMapping(arg) && Object.keys(arg).length > 0 && Object.keys(arg).every((k) => k.startsWith('$'))
        ? conditionProblems(arg, at)
        : fail('a mapping of operators');
    case '$elemMatch':
      if (!isMapping(arg)) return fail("a mapping: conditions on the list's items");
      return Object.keys(arg).every((k) => k.startsWith('$')) ? conditionProblems(arg, at) : queryProblems(arg, at);
    default:
      return unknownOperator(op, FIELD_NAMES, at);
  }
}

/**
 * What is wrong with a filter, each problem saying where in it; empty when it is valid. Checked beyond
 * what sift refuses by itself: sift quietly never matches `$in: USD`, and fails on `$type: nope` only
 * when an event arrives, in the fan-out.
 */
export function filterProblems(filter: EventFilter): string[] {
  const problems = queryProblems(filter, []);
  if (problems.length) return problems;
  try {
    compileFilter(filter);
    return [];
  } catch (err) {
    return [(err as Error).message];
  }
}

/** The filter as a test over one event's document; throws on a filter sift cannot compile. */
export function compileFilter(filter: EventFilter): FilterTest {
  return createQueryTester<Record<string, unknown>>(filter, { operations: OPERATIONS });
}
