import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

// Every relative link in the README and docs/ must lead to a file of this repository (and, for a
// Markdown file with a #fragment, to one of its headings); anything else must be a public page.
const ROOT = path.resolve(__dirname, '..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return markdownFiles(full);
    return name.endsWith('.md') ? [full] : [];
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');
}

function withoutCode(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

function headings(file: string): Set<string> {
  return new Set(
    [
      ...readFileSync(file, 'utf8')
        .replace(/^```[\s\S]*?^```/gm, '')
        .matchAll(/^#{1,6} (.+)$/gm),
    ].map((m) => slug(m[1] ?? '')),
  );
}

/** Each [text](target) link of a Markdown file, outside code. */
function links(file: string): string[] {
  return [...withoutCode(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map(
    (m) => m[1] ?? '',
  );
}

/** What is wrong with one link from `file`, or undefined. */
function problem(file: string, link: string): string | undefined {
  if (/^https:\/\//.test(link)) return undefined;
  if (/^[a-z][a-z0-9+.-]*:/i.test(link)) return 'not a relative link, nor a public https:// page';
  const [target = '', fragment] = link.split('#');
  const resolved = target === '' ? file : path.resolve(path.dirname(file), decodeURIComponent(target));
  const relative = path.relative(ROOT, resolved);
  if (relative.startsWith('..') || path.isAbsolute(relative) || target.startsWith('/'))
    return 'points outside the repository';
  if (!existsSync(resolved) || !statSync(resolved).isFile()) return 'no such file in the repository';
  if (fragment && resolved.endsWith('.md') && !headings(resolved).has(fragment))
    return `no heading #${fragment} in ${relative}`;
  return undefined;
}

const files = [path.join(ROOT, 'README.md'), ...markdownFiles(path.join(ROOT, 'docs'))];

describe('links in README.md and docs/', () => {
  it('finds the documents and their links', () => {
    expect(files.length).toBeGreaterThan(5);
    expect(links(path.join(ROOT, 'README.md')).length).toBeGreaterThan(10);
  });

  it.each(files.map((f) => [path.relative(ROOT, f), f]))(
    '%s: every relative link resolves to a file of the repository',
    (_name, file) => {
      const bad = links(file)
        .map((link) => ({ link, problem: problem(file, link) }))
        .filter((l) => l.problem !== undefined);
      expect(bad).toEqual([]);
    },
  );

  it('the checker itself refuses a missing file, a path outside the repository, an absolute path and a missing heading', () => {
    const readme = path.join(ROOT, 'README.md');
    expect(problem(readme, 'docs/no-such-file.md')).toBe('no such file in the repository');
    expect(problem(readme, '../shared/spec/platform-interface.md')).toBe('points outside the repository');
    expect(problem(readme, '/etc/passwd')).toBe('points outside the repository');
    expect(problem(readme, 'file:///etc/passwd')).toBe('not a relative link, nor a public https:// page');
    expect(problem(readme, 'docs/deploy.md#no-such-heading')).toBe('no heading #no-such-heading in docs/deploy.md');
    expect(problem(readme, 'docs/deploy.md#compose')).toBeUndefined();
  });
});
