/**
 * How deep a JSON body may nest (objects and arrays). Genuine notifications nest a few levels; a body
 * nested thousands deep parses, but every recursive walk over it afterwards (schema checks, filters,
 * serialisation into the queue, the event view) can overflow the stack.
 */
export const MAX_JSON_DEPTH = 64;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const COLON = 0x3a; // :

/**
 * Whether JSON text nests objects and arrays deeper than `limit`: one pass over the characters, brackets
 * inside strings not counted. Meant to run before JSON.parse; on text that is not JSON its answer only
 * says whether the brackets went that deep, and the parse then says what is wrong.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  return membersUnlessDeeperThan(text, limit) < 0;
}

/**
 * The same pass, counting on the way the members of every object (one colon outside strings each, in
 * JSON), which the duplicate-key check compares with the keys parsed: -1 when it nests deeper than `limit`.
 */
export function membersUnlessDeeperThan(text: string, limit: number): number {
  let depth = 0;
  let members = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === COLON) members++;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > limit) return -1;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return members;
}
