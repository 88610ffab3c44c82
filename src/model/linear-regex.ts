import type * as Re2js from 're2js';
import { createEqualsOperation } from 'sift';

type SiftOptions = Parameters<typeof createEqualsOperation>[2];

/**
 * re2js, loaded with the first `$regex` compiled: a process whose targets' filters have none (most) does not
 * carry its modules (0.6 MB of live heap).
 */
function re2(): typeof Re2js.RE2JS {
  return (require('re2js') as typeof Re2js).RE2JS;
}

/** `$options` letters and the RE2 flags they set; `g` and `u` change nothing for a test (RE2 reads Unicode). */
function flagOf(letter: string): number | undefined {
  const RE2JS = re2();
  const flags: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL, g: 0, u: 0 };
  return Object.hasOwn(flags, letter) ? flags[letter] : undefined;
}

/**
 * A filter's regular expression, compiled for RE2's linear-time engine (re2js, a pure JavaScript
 * port): matching a value costs time proportional to its length whatever the pattern, so a pattern
 * that would backtrack catastrophically in JavaScript's engine (`^([A-Za-z]+ ?)*$` on a long name
 * ending in `!`) cannot hold the event loop. RE2 has no backreferences or lookaround; a pattern
 * using them is refused with RE2's reason. Throws on a pattern or flag it refuses.
 */
export function compileLinearRegex(pattern: string, options?: string): (value: string) => boolean {
  let flags = 0;
  for (const letter of options ?? '') {
    const flag = flagOf(letter);
    if (flag === undefined) throw new Error(`$options: unknown flag "${letter}"; use i, m, s (g and u change nothing)`);
    flags |= flag;
  }
  let re: Re2js.RE2JS;
  try {
    re = re2().compile(pattern, flags);
  } catch (err) {
    throw new Error(
      `$regex ${JSON.stringify(pattern)} is refused: ${(err as Error).message} (filters use RE2 syntax, which runs ` +
        `in linear time: no backreferences or lookaround)`,
    );
  }
  return (value) => re.test(value);
}

/**
 * sift's `$regex`, over {@link compileLinearRegex}: matches string values (and a list's string items), as sift's own
 * does.
 */
export function $linearRegex(pattern: string, ownerQuery: Record<string, unknown>, options: SiftOptions) {
  const flags = ownerQuery.$options;
  const test = compileLinearRegex(pattern, typeof flags === 'string' ? flags : undefined);
  return createEqualsOperation((value: unknown) => typeof value === 'string' && test(value), ownerQuery, options);
}
