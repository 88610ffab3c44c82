const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const COLON = 0x3a; // :
const COMMA = 0x2c; // ,
const OPEN_OBJECT = 0x7b; // {
const CLOSE_OBJECT = 0x7d; // }
const OPEN_ARRAY = 0x5b; // [
const CLOSE_ARRAY = 0x5d; // ]

/** An open object (the keys seen, the key being read) or array (the index being read). */
interface Frame {
  keys: Set<string> | undefined;
  key: string;
  index: number;
}

/**
 * The first key that appears twice in one object of JSON text, at any depth, as a path
 * (`data.items[2].amount`), or undefined; `parsed` is JSON.parse's value of that text and `members` the
 * count of its members (json-depth.ts's pass counts them). JSON.parse keeps the last copy while the bytes
 * keep both, so a check of the parsed value would judge one copy and forward the other. Cheap when there
 * is none (the rule): as many members in the text as keys in the parsed value means no key was lost. Only
 * otherwise does it look for the key (one pass with a set of keys per object).
 */
export function duplicateKeyIn(text: string, parsed: unknown, members: number): string | undefined {
  return members === keysIn(parsed) ? undefined : firstDuplicate(text);
}

/** The keys of every object in a parsed JSON value (its depth is bounded before it is parsed). */
function keysIn(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  let keys = 0;
  if (Array.isArray(value)) {
    for (const item of value) keys += keysIn(item);
    return keys;
  }
  for (const key in value) keys += 1 + keysIn((value as Record<string, unknown>)[key]);
  return keys;
}

function firstDuplicate(text: string): string | undefined {
  const stack: Frame[] = [];
  let top: Frame | undefined;
  let start = -1;
  let escaped = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (start >= 0) {
      if (c === BACKSLASH) {
        escaped = true;
        i++;
      } else if (c === QUOTE) {
        if (top?.keys && isKey(text, i + 1)) {
          const raw = text.slice(start, i);
          // Two spellings of one key ("a" and "\u0061") are one key once parsed.
          const key = escaped ? (JSON.parse(`"${raw}"`) as string) : raw;
          if (top.keys.has(key)) return pathOf(stack, key);
          top.keys.add(key);
          top.key = key;
        }
        start = -1;
      }
    } else if (c === QUOTE) {
      start = i + 1;
      escaped = false;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      top = { keys: c === OPEN_OBJECT ? new Set() : undefined, key: '', index: 0 };
      stack.push(top);
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      stack.pop();
      top = stack[stack.length - 1];
    } else if (c === COMMA && top && !top.keys) top.index++;
  }
  return undefined;
}

/** Whether the string that ended just before `i` is a key: the next character past white space is a colon. */
function isKey(text: string, i: number): boolean {
  while (i < text.length && text.charCodeAt(i) <= 0x20) i++;
  return text.charCodeAt(i) === COLON;
}

function pathOf(stack: readonly Frame[], key: string): string {
  let path = '';
  for (const frame of stack.slice(0, -1))
    path += frame.keys ? `${path === '' ? '' : '.'}${frame.key}` : `[${frame.index}]`;
  return `${path}${path === '' ? '' : '.'}${key}`;
}
