import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const made: string[] = [];

// Registered when a test file first imports this module (jest gives each file its own copy), so every
// directory a file made is gone after its last test, whether the tests passed or not.
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A new directory under the OS's temporary directory, removed after the test file's last test. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), `${prefix}-`));
  made.push(dir);
  return dir;
}
