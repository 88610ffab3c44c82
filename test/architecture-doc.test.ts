import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');

/** The folders of src/, as they are on disk. */
const folders = readdirSync(path.join(ROOT, 'src'), { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();

/** The `src/<folder>` cells of docs/architecture.md's layout table. */
function documentedFolders(): string[] {
  const text = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
  const layout = text.slice(text.indexOf('## Layout'));
  return [...layout.matchAll(/^\|[^|]*\| `src\/([a-z-]+)` \|/gm)].map((m) => m[1]!).sort();
}

/** The layers .dependency-cruiser.js names, lowest first. */
function ruleLayers(): string[] {
  const rules = readFileSync(path.join(ROOT, '.dependency-cruiser.js'), 'utf8');
  const list = /const LAYERS = \[([\s\S]*?)\];/.exec(rules)?.[1] ?? '';
  return [...list.matchAll(/^\s*'([a-z-]+)',/gm)].map((m) => m[1]!);
}

describe('docs/architecture.md and the layer rules', () => {
  it('every folder of src/ has its row in the layout table, and no row names a folder that is gone', () => {
    expect(folders.length).toBeGreaterThan(10);
    expect(documentedFolders()).toEqual(folders);
  });

  it('the layer rules name every folder of src/, in the order the table numbers them', () => {
    expect([...ruleLayers()].sort()).toEqual(folders);
    const text = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
    const numbered = [...text.matchAll(/^\| (\d+) \| `src\/([a-z-]+)` \|/gm)].map((m) => [Number(m[1]), m[2]] as const);
    expect(numbered.map(([, name]) => name)).toEqual(ruleLayers());
    expect(numbered.map(([n]) => n)).toEqual(ruleLayers().map((_, i) => i + 1));
  });
});
