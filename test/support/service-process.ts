import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';

/** A port free right now on 127.0.0.1 (the OS picks it; closed again at once). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const ROOT = path.resolve(__dirname, '../..');

/** The real service (src/main.ts) in its own process, transpiled on the fly by ts-node with swc. */
export class ServiceProcess {
  readonly lines: Record<string, unknown>[] = [];
  private ports?: { receiver: number; admin: number };
  private constructor(readonly child: ChildProcess) {}

  /**
   * Like {@link start}, on ports chosen here, ready when its admin port answers /healthz: for a
   * service that logs only warnings and errors (LOG_LEVEL=warn), which prints no start-up lines.
   */
  static async startQuiet(env: Record<string, string>, nodeArgs?: string[]): Promise<ServiceProcess> {
    const ports = { receiver: await freePort(), admin: await freePort() };
    const service = await ServiceProcess.start(
      { LOG_LEVEL: 'warn', ...env, PORT: String(ports.receiver), ADMIN_PORT: String(ports.admin) },
      async () => {
        const res = await fetch(`http://127.0.0.1:${ports.admin}/healthz`).catch(() => undefined);
        return res?.status === 200;
      },
      nodeArgs,
    );
    service.ports = ports;
    return service;
  }

  /** `nodeArgs`: node's arguments, the script included (see built-service.ts); ts-node on src/main.ts unless given. */
  static async start(
    env: Record<string, string>,
    ready?: () => Promise<boolean>,
    nodeArgs = ['-r', 'ts-node/register', path.join(ROOT, 'src/main.ts')],
  ): Promise<ServiceProcess> {
    const child = spawn(process.execPath, nodeArgs, {
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
    const up = ready
      ? service.waitUntil(ready, 20000)
      : service.waitForLog((l) => l.message === 'admin listening', 20000);
    await up.catch(async (err: Error) => {
      // A process that never came up is not in the caller's list to stop; left running it keeps jest alive.
      await service.kill('SIGKILL');
      throw new Error(`${err.message}\n${stderr}`);
    });
    return service;
  }

  get port(): number {
    return this.ports?.receiver ?? Number(this.lines.find((l) => l.message === 'receiver listening')?.port);
  }

  get adminPort(): number {
    return this.ports?.admin ?? Number(this.lines.find((l) => l.message === 'admin listening')?.port);
  }

  /** Waits until /readyz answers 200: Redis is connected, so the admin API can act. */
  async waitForReady(timeoutMs = 20000): Promise<void> {
    await this.waitUntil(async () => {
      const res = await fetch(`http://127.0.0.1:${this.adminPort}/readyz`).catch(() => undefined);
      return res?.status === 200;
    }, timeoutMs);
  }

  private async waitUntil(ready: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await ready())) {
      if (this.child.exitCode !== null || Date.now() > deadline)
        throw new Error(`not ready (exit ${this.child.exitCode})`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async waitForLog(
    predicate: (l: Record<string, unknown>) => boolean,
    timeoutMs = 10000,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find(predicate);
      if (found) return found;
      if (this.child.exitCode !== null || Date.now() > deadline)
        throw new Error(`log line not seen (exit ${this.child.exitCode})`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Sends the signal and waits for the process to end; resolves with its exit code or signal. */
  async kill(signal: NodeJS.Signals): Promise<number | string> {
    if (this.child.exitCode !== null || this.child.signalCode !== null)
      return this.child.exitCode ?? String(this.child.signalCode);
    const exited = new Promise<number | string>((r) => this.child.once('exit', (code, sig) => r(code ?? String(sig))));
    this.child.kill(signal);
    return exited;
  }
}
