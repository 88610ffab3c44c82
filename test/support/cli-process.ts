import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { stopChild } from '../../src/demo/stop-child';

const ROOT = path.resolve(__dirname, '../..');

/** The CLI (src/cli/main.ts) in its own process, for long-running commands such as `listen`. */
export class CliProcess {
  readonly lines: string[] = [];
  stderr = '';
  private constructor(readonly child: ChildProcess) {}

  static start(args: string[], env: Record<string, string> = {}): CliProcess {
    const child = spawn(process.execPath, ['-r', 'ts-node/register', path.join(ROOT, 'src/cli/main.ts'), ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const cli = new CliProcess(child);
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      cli.lines.push(...parts);
    });
    child.stderr!.on('data', (c: Buffer) => (cli.stderr += c.toString()));
    return cli;
  }

  async waitForLine(predicate: (line: string) => boolean, timeoutMs = 20000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find(predicate);
      if (found !== undefined) return found;
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(
          `line not seen (exit ${this.child.exitCode}); output:\n${this.lines.join('\n')}\n${this.stderr}`,
        );
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  stop(): Promise<void> {
    return stopChild(this.child, 5000);
  }
}
