import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { freePort } from './redis-server';

/** Where Debian's `postgresql` package puts the server's binaries (newest major first), or the PATH. */
function binary(name: string): string {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const majors = readdirSync(root)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const major of majors) {
      const candidate = path.join(root, major, 'bin', name);
      if (existsSync(candidate)) return candidate;
    }
  }
  return name;
}

/** initdb and postgres refuse to run as root: as root, they run as the `postgres` user Debian creates. */
function serverUser(): { uid: number; gid: number } | Record<string, never> {
  if (userInfo().uid !== 0) return {};
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

/**
 * A throwaway PostgreSQL on a free port with its data in a temporary directory (trust authentication;
 * no fsync, so a commit survives the server's crash but not the machine's), for the tests and the
 * benchmark. It can be stopped as a crash would (`immediate`) or cleanly, started again on the same
 * port with its data, and removed.
 */
export class PostgresServer {
  private child?: ChildProcess;
  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  /** The superuser's connection string to database `database` (default `postgres`). */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  static async start(): Promise<PostgresServer> {
    const dir = mkdtempSync(path.join(tmpdir(), 'pg-'));
    const user = serverUser();
    if ('uid' in user) chownSync(dir, user.uid, user.gid);
    const init = spawnSync(
      binary('initdb'),
      ['-D', path.join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync'],
      { encoding: 'utf8', ...user, cwd: dir },
    );
    if (init.status !== 0) {
      rmSync(dir, { recursive: true, force: true });
      const why = init.error?.message ?? init.stderr.trim().split('\n').slice(-3).join(' ');
      throw new Error(`cannot initdb a throwaway PostgreSQL (${why}): apt-get install postgresql`);
    }
    const server = new PostgresServer(await freePort(), dir);
    await server.start();
    return server;
  }

  async start(): Promise<void> {
    const child = spawn(
      binary('postgres'),
      [
        '-D',
        path.join(this.dir, 'data'),
        '-p',
        String(this.port),
        '-k',
        this.dir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'max_connections=200',
      ],
      { stdio: 'ignore', ...serverUser(), cwd: this.dir },
    );
    this.child = child;
    const deadline = Date.now() + 20000;
    while (!(await portOpen(this.port))) {
      if (child.exitCode !== null) throw new Error(`postgres exited with code ${child.exitCode} before listening`);
      if (Date.now() > deadline) throw new Error(`postgres on ${this.port} did not listen within 20 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Listening comes before accepting: wait until a connection is served, not refused as "starting up".
    while (spawnSync(binary('pg_isready'), ['-h', '127.0.0.1', '-p', String(this.port), '-q']).status !== 0) {
      if (Date.now() > deadline) throw new Error(`postgres on ${this.port} did not accept connections within 20 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Stops the server: `immediate` as a crash would (no checkpoint, every connection cut), `fast` as
   * an orderly shutdown. The data stays for `start()`.
   */
  async stop(mode: 'immediate' | 'fast' = 'fast'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(mode === 'immediate' ? 'SIGQUIT' : 'SIGINT');
    await exited;
    this.child = undefined;
  }

  /** Stops the server and removes its data directory. */
  async remove(): Promise<void> {
    await this.stop('immediate');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
