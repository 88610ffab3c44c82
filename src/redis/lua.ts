import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The comment a script file opens with (what it does, its KEYS and ARGV), as BullMQ's own scripts do. */
const HEADER = /^--\[\[[\s\S]*?\]\]\n/;
/** A line that stands for another script's text, named by the caller. */
const INCLUDE = /^--- @include "([^"]+)"$/gm;

/**
 * A Lua script of ours, read once from `<dir>/<name>.lua`: its header comment left out (it is for the
 * reader, not for Redis), and each `--- @include "<name>"` line replaced by the text given for it.
 * The build copies the .lua files beside the compiled JavaScript (scripts/copy-lua.js).
 */
export function loadLua(dir: string, name: string, includes: Readonly<Record<string, string>> = {}): string {
  const text = readFileSync(path.join(dir, `${name}.lua`), 'utf8').replace(HEADER, '');
  return text.replace(INCLUDE, (_line, included: string) => {
    const content = includes[included];
    if (content === undefined) throw new Error(`${name}.lua includes "${included}", which its loader does not give`);
    return content;
  });
}
