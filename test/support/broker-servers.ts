import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import path from 'node:path';
import { freePort } from './redis-server';
import { tempDir } from './temp-dir';

/** Resolves once something accepts TCP connections on 127.0.0.1:`port`. */
async function waitForPort(port: number, timeoutMs: number, what: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`${what} exited with code ${child.exitCode} before listening on ${port}`);
    const open = await new Promise<boolean>((resolve) => {
      const s = tcpConnect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function killAndWait(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

/** A stopped process (SIGSTOP) holds its connections open and answers nothing, as a stalled broker does. */
interface Freezable {
  pause(): void;
  resume(): void;
}

/**
 * A private `nats-server -js` on free ports with its own store directory, for a test that stops it.
 * Debian's package (`apt-get install nats-server`).
 */
export class NatsServer implements Freezable {
  private child?: ChildProcess;
  private constructor(
    readonly port: number,
    private readonly storeDir: string,
  ) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<NatsServer> {
    const server = new NatsServer(await freePort(), tempDir('nats-store'));
    await server.start();
    return server;
  }

  async start(): Promise<void> {
    const bin = existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server';
    this.child = spawn(bin, ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.storeDir], {
      stdio: 'ignore',
    });
    this.child.once('error', () => undefined);
    await waitForPort(this.port, 10000, 'nats-server', this.child);
  }

  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    this.resume();
    await killAndWait(this.child, 'SIGTERM');
    this.child = undefined;
  }
}

/** Where Debian's package keeps RabbitMQ's own scripts (the one on PATH re-runs itself through su). */
function rabbitSbin(): string {
  const lib = '/usr/lib/rabbitmq/lib';
  const dir = existsSync(lib) ? readdirSync(lib).find((d) => d.startsWith('rabbitmq_server-')) : undefined;
  if (!dir) throw new Error('RabbitMQ is not installed: apt-get install rabbitmq-server');
  return path.join(lib, dir, 'sbin');
}

/**
 * A private RabbitMQ on free ports (AMQP, Erlang distribution, its own epmd), with its database, logs
 * and HOME in a temporary directory and no plugins, for a test that stops it. It listens after about
 * 7 s: start it once per test file. guest/guest may log in from 127.0.0.1.
 */
export class RabbitServer implements Freezable {
  private child?: ChildProcess;
  private epmd?: ChildProcess;
  private constructor(
    readonly port: number,
    private readonly distPort: number,
    private readonly epmdPort: number,
    private readonly dir: string,
  ) {}

  get url(): string {
    return `amqp://guest:guest@127.0.0.1:${this.port}`;
  }

  static async start(): Promise<RabbitServer> {
    const server = new RabbitServer(await freePort(), await freePort(), await freePort(), tempDir('rabbitmq'));
    await server.start();
    return server;
  }

  private env(): NodeJS.ProcessEnv {
    const d = this.dir;
    return {
      ...process.env,
      HOME: d,
      ERL_EPMD_PORT: String(this.epmdPort),
      RABBITMQ_CONF_ENV_FILE: path.join(d, 'rabbitmq-env.conf'),
      RABBITMQ_CONFIG_FILE: path.join(d, 'rabbitmq.conf'),
      RABBITMQ_ENABLED_PLUGINS_FILE: path.join(d, 'enabled_plugins'),
      RABBITMQ_NODENAME: `whr${this.port}@localhost`,
      RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
      RABBITMQ_NODE_PORT: String(this.port),
      RABBITMQ_DIST_PORT: String(this.distPort),
      RABBITMQ_MNESIA_BASE: path.join(d, 'mnesia'),
      RABBITMQ_LOG_BASE: path.join(d, 'log'),
      RABBITMQ_PID_FILE: path.join(d, 'rabbit.pid'),
      RABBITMQ_USE_LONGNAME: 'false',
    };
  }

  async start(): Promise<void> {
    const d = this.dir;
    if (!existsSync(path.join(d, 'rabbitmq.conf'))) {
      mkdirSync(path.join(d, 'log'), { recursive: true });
      writeFileSync(path.join(d, 'rabbitmq-env.conf'), '');
      writeFileSync(
        path.join(d, 'rabbitmq.conf'),
        `listeners.tcp.default = 127.0.0.1:${this.port}\nloopback_users = none\n`,
      );
      writeFileSync(path.join(d, 'enabled_plugins'), '[].\n');
    }
    const env = this.env();
    if (!this.epmd || this.epmd.exitCode !== null) {
      this.epmd = spawn('epmd', ['-port', String(this.epmdPort), '-address', '127.0.0.1'], { env, stdio: 'ignore' });
      this.epmd.once('error', () => undefined);
    }
    // Its own process group, so stopping it takes the Erlang VM and its helpers with it.
    this.child = spawn(path.join(rabbitSbin(), 'rabbitmq-server'), [], { env, stdio: 'ignore', detached: true });
    this.child.once('error', () => undefined);
    await waitForPort(this.port, 60000, 'rabbitmq-server', this.child);
  }

  private signalGroup(signal: NodeJS.Signals): void {
    if (this.child?.pid) {
      try {
        process.kill(-this.child.pid, signal);
      } catch {
        // already gone
      }
    }
  }

  pause(): void {
    this.signalGroup('SIGSTOP');
  }

  resume(): void {
    this.signalGroup('SIGCONT');
  }

  /** Stops the broker (its data stays for a `start()` again on the same ports); `epmd` too with `all`. */
  async stop(all = true): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      this.signalGroup('SIGCONT');
      this.signalGroup('SIGKILL');
      await exited;
    }
    this.child = undefined;
    if (all) {
      await killAndWait(this.epmd);
      this.epmd = undefined;
    }
  }
}
