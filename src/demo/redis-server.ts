import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

/** A free TCP port on 127.0.0.1, as the kernel hands one out. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '0.0.0.0', () => srv.close(() => resolve(true)));
  });
}

/**
 * For one-off connections: ioredis's disconnect() ends the socket and arms a timer (2 s by default)
 * that is cleared only by the socket's next 'close'; a socket that had already closed (a refused
 * connection, a killed node) never closes again, so the timer kept the process alive for 2 s after
 * its work was done (jest: "did not exit one second after the test run has completed"). A one-off
 * connection has nothing left to flush when it is dropped.
 */
const ONE_OFF = { disconnectTimeout: 0 } as const;

/**
 * Runs `use` on a one-off connection to the node at 127.0.0.1:`port`, then drops it. The connection
 * never retries and a command gives up after a second, so asking a killed or frozen node fails fast.
 */
export async function withNode<T>(port: number, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(port, '127.0.0.1', {
    ...ONE_OFF,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
    commandTimeout: 1000,
  });
  client.on('error', () => undefined);
  try {
    return await use(client);
  } finally {
    client.disconnect();
  }
}

export async function isRedisReachable(url: string): Promise<boolean> {
  const client = new Redis(url, {
    ...ONE_OFF,
    lazyConnect: true,
    connectTimeout: 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * A throwaway redis-server on a free port that keeps nothing on disk, for the demo, the tests and
 * the benchmark. It can be stopped, started again on the same port, or frozen, to simulate faults.
 */
export interface RedisServerOptions {
  /** A config file, given first (Sentinel needs one it can rewrite). */
  configFile?: string;
  /** More arguments, e.g. `--replicaof` or `--cluster-enabled yes`. */
  args?: string[];
}

export class RedisServer {
  private child?: ChildProcess;
  private constructor(
    readonly port: number,
    private readonly options: RedisServerOptions,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), options);
    await server.start();
    return server;
  }

  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        ...(this.options.configFile ? [this.options.configFile] : []),
        ...[
          '--port',
          String(this.port),
          '--bind',
          '127.0.0.1',
          '--save',
          '',
          '--appendonly',
          'no',
          '--maxmemory-policy',
          'noeviction',
        ],
        ...(this.options.args ?? []),
      ],
      { stdio: 'ignore' },
    );
    const failed = new Promise<never>((_, reject) =>
      child.once('error', (err) =>
        reject(
          new Error(
            `cannot start redis-server (${err.message}): install it (apt-get install redis-server) or set REDIS_URL`,
          ),
        ),
      ),
    );
    this.child = child;
    await Promise.race([this.waitUntilUp(), failed]);
  }

  private async waitUntilUp(timeoutMs = 10000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await isRedisReachable(this.url))) {
      if (Date.now() > deadline) throw new Error(`redis-server on ${this.port} did not start within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Freezes the server (SIGSTOP): connections stay open but nothing is answered, like a stalled Redis. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    this.child = undefined;
  }
}
