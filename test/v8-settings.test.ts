import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { transformFileSync } from '@swc/core';

const SOURCE = path.resolve(__dirname, '../src/v8-settings.ts');

/**
 * Runs the settings in a fresh node (the test's own heap has long since grown): holds the young
 * generation while a start-up's worth of objects stays alive, then lets it grow for the role while
 * deliveries' worth of garbage with survivors is allocated over turns of the event loop. Answers
 * the new space's size (both semi-spaces) in MB at each point.
 */
function youngGeneration(worker: boolean): { held: number; grown: number } {
  const dir = mkdtempSync(path.join(tmpdir(), 'v8-settings-'));
  try {
    writeFileSync(path.join(dir, 'v8-settings.js'), transformFileSync(SOURCE, { module: { type: 'commonjs' } }).code);
    const script = `
      const v8 = require('node:v8');
      const s = require(${JSON.stringify(path.join(dir, 'v8-settings.js'))});
      const newSpace = () => v8.getHeapSpaceStatistics().find((x) => x.space_name === 'new_space').space_size / 1048576;
      s.holdYoungGeneration();
      const kept = [];
      for (let i = 0; i < 300000; i++) kept.push({ i, s: 'module ' + i });
      const held = newSpace();
      s.applyRoleV8Settings(${worker});
      (async () => {
        let live = [];
        for (let turn = 0; turn < 400; turn++) {
          for (let i = 0; i < 5000; i++) live.push({ turn, i, s: 'delivery ' + i });
          if (live.length > 60000) live = live.slice(30000);
          await new Promise((resolve) => setImmediate(resolve));
        }
        process.stdout.write(JSON.stringify({ held, grown: newSpace() }));
      })();`;
    return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as {
      held: number;
      grown: number;
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the V8 settings of the young generation', () => {
  it('while the modules load, then it stays at its starting size; a worker lets it grow to 8 MB semi-spaces only', () => {
    const { held, grown } = youngGeneration(true);
    expect(held).toBeLessThanOrEqual(2);
    expect(grown).toBeGreaterThan(held);
    expect(grown).toBeLessThanOrEqual(16);
  });

  it("any other role lets it grow to V8's own ceiling", () => {
    const { held, grown } = youngGeneration(false);
    expect(held).toBeLessThanOrEqual(2);
    expect(grown).toBeGreaterThan(16);
  });
});
