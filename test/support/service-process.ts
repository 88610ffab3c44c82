import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** The real service (src/main.ts) in its own process, transpiled on the fly by ts-node with swc. */
export class ServiceProcess {
  readonly lines: Record<string, unknown>[] = [];
  private constructor(readonly child: ChildProcess) {}

  static async start(env: Record<string, string>): Promise<ServiceProcess> {
    const child = spawn(process.execPath, ['-r', 'ts-node/register', path.join(ROOT, 'src/main.ts')], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', ADMIN_PORT: '0', LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const service = new ServiceProcess(child);
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      for (const line of parts.filter(Boolean)) {
        try {
          service.lines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          service.lines.push({ message: line });
        }
      }
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    await service.waitForLog((l) => l.message === 'admin listening', 20000).catch(async (err: Error) => {
      // A process that never came up is not in the caller's list to stop; left running it keeps jest alive.
      await service.kill('SIGKILL');
      throw new Error(`${err.message}\n${stderr}`);
    });
    return service;
  }

  get port(): number {
    return Number(this.lines.find((l) => l.message === 'receiver listening')?.port);
  }

  async waitForLog(predicate: (l: Record<string, unknown>) => boolean, timeoutMs = 10000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find(predicate);
      if (found) return found;
      if (this.child.exitCode !== null || Date.now() > deadline) throw new Error(`log line not seen (exit ${this.child.exitCode})`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Sends the signal and waits for the process to end; resolves with its exit code or signal. */
  async kill(signal: NodeJS.Signals): Promise<number | string> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode ?? String(this.child.signalCode);
    const exited = new Promise<number | string>((r) => this.child.once('exit', (code, sig) => r(code ?? String(sig))));
    this.child.kill(signal);
    return exited;
  }
}
