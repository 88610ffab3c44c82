import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { transformFileSync } from '@swc/core';
import { serviceNodeFlags } from '../../bench/harness/processes';

const ROOT = path.resolve(__dirname, '../..');

export interface BuiltService {
  /** node's arguments to run the service as `npm start` does: its V8 memory flags, then the compiled main.js. */
  nodeArgs: string[];
  remove(): void;
}

function compile(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    if (entry.isDirectory()) compile(source, path.join(to, entry.name));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      const { code } = transformFileSync(source, {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'commonjs' },
        sourceMaps: false,
      });
      writeFileSync(path.join(to, entry.name.replace(/\.ts$/, '.js')), code);
    } else if (entry.name.endsWith('.lua')) copyFileSync(source, path.join(to, entry.name)); // read at start, beside the code
  }
}

/**
 * The service compiled to JavaScript (swc, a second or two) in a folder of the project (so its
 * packages and config/ are found), started with the V8 flags of `npm start`: what a memory
 * measurement should see, without ts-node's compiler in the process.
 */
export function buildService(): BuiltService {
  const dir = mkdtempSync(path.join(ROOT, '.test-build-'));
  compile(path.join(ROOT, 'src'), path.join(dir, 'src'));
  return {
    nodeArgs: [...serviceNodeFlags(), path.join(dir, 'src/main.js')],
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
