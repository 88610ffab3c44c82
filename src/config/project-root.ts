import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The folder holding package.json, whether running from src/ (tests) or dist/src/ (built). */
export function projectRoot(from = __dirname): string {
  let dir = from;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${from}`);
    dir = parent;
  }
  return dir;
}

/** What package.json says of the service: its name, version, description and licence. */
export function packageInfo(): { name: string; version: string; description: string; license: string } {
  return JSON.parse(readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as ReturnType<typeof packageInfo>;
}
