import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { ProfileEntry } from './results';

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: CpuProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export function newestProfile(dir: string): string | undefined {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(dir, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return files[0];
}

/** Where a frame comes from, short: `express/lib/router`, `src/http/app.ts`, `node:crypto`. */
function location(url: string, line: number): string {
  if (!url) return '';
  const clean = url.replace(/^file:\/\//, '');
  const nm = clean.lastIndexOf('node_modules/');
  const short =
    nm >= 0 ? clean.slice(nm + 'node_modules/'.length) : clean.replace(/^.*\/(dist\/)?(src|bench)\//, '$2/');
  return `${short}:${line + 1}`;
}

/**
 * Self time per function (time the CPU was in that function itself, not its callees), summed over
 * every sample, excluding idle time. The package view adds up self time per dependency or folder of
 * our own code, Node internals charged to their caller.
 */
export function summarizeProfile(
  file: string,
  top = 25,
): { totalMs: number; top: ProfileEntry[]; byPackage: { name: string; selfPct: number }[] } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
  // Node internals and natives (crypto, socket writes) are charged to the nearest caller that is a
  // dependency or our own code, so the package view says who asked for the work.
  const ownerOf = (id: number): string => {
    let current: number | undefined = id;
    for (let depth = 0; current !== undefined && depth < 200; depth++) {
      const node = byId.get(current);
      if (!node) break;
      const pkg = packageOf(node.callFrame.url, node.callFrame.functionName);
      if (!pkg.startsWith('node:') && pkg !== '(native)') return pkg;
      current = parentOf.get(current);
    }
    return packageOf(byId.get(id)?.callFrame.url ?? '', byId.get(id)?.callFrame.functionName ?? '');
  };
  const selfUs = new Map<string, { us: number; fn: string; loc: string }>();
  const byPackage = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    const dt = profile.timeDeltas[i] ?? 0;
    if (!node || node.callFrame.functionName === '(idle)') return;
    totalUs += dt;
    const fn = node.callFrame.functionName || '(anonymous)';
    const loc = location(node.callFrame.url, node.callFrame.lineNumber);
    const key = `${fn}@${loc}`;
    const entry = selfUs.get(key) ?? { us: 0, fn, loc };
    entry.us += dt;
    selfUs.set(key, entry);
    const pkg = ownerOf(id);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + dt);
  });
  const pct = (us: number) => Math.round((us / Math.max(1, totalUs)) * 1000) / 10;
  return {
    totalMs: Math.round(totalUs / 1000),
    top: [...selfUs.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((e) => ({ selfMs: Math.round(e.us / 1000), selfPct: pct(e.us), function: e.fn, location: e.loc })),
    byPackage: [...byPackage.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20)
      .map(([name, us]) => ({ name, selfPct: pct(us) })),
  };
}

function packageOf(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  if (url.startsWith('node:')) return url;
  const clean = url.replace(/^file:\/\//, '');
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(clean);
  if (m && m[1]) return m[1];
  const own = /\/(src|bench)\/([^/]+)/.exec(clean);
  return own ? `${own[1]}/${own[2]}` : clean;
}
