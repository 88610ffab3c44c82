import { readFileSync } from 'node:fs';
import path from 'node:path';
import { serviceNodeFlags } from '../bench/harness/processes';

const ROOT = path.resolve(__dirname, '..');

/** The image's CMD, as the arguments docker passes to node. */
function imageCommand(): string[] {
  const cmd = /^CMD (\[.*\])$/m.exec(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'))?.[1];
  if (!cmd) throw new Error('Dockerfile has no exec-form CMD');
  return JSON.parse(cmd) as string[];
}

describe('the documented ways to start the service', () => {
  it('npm start, the image and the bench give node the same V8 memory limits', () => {
    const flags = serviceNodeFlags();
    expect(flags).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^--max-old-space-size=\d+$/),
        expect.stringMatching(/^--max-semi-space-size=\d+$/),
      ]),
    );
    const cmd = imageCommand();
    expect(cmd[0]).toBe('node');
    expect(cmd.filter((arg) => arg.startsWith('--'))).toEqual(flags);
    expect(cmd.at(-1)).toBe('dist/src/main.js');
  });
});
