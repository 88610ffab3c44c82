import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { stopChild } from '../src/demo/stop-child';
import { testRedisUrl } from './support/harness';

// The quick start's demo, run as the README says (`DEMO_EXIT=1 npm run demo`, which builds first),
// then kept running while every CLI command it prints is run as printed. It uses the suite's Redis as
// a shared one, to show that it leaves none of its keys behind.
jest.setTimeout(180000);

const ROOT = path.resolve(__dirname, '..');
const env: Record<string, string | undefined> = { ...process.env, REDIS_URL: testRedisUrl() };
delete env.DEMO_EXIT;
delete env.PORT;

async function demoKeys(): Promise<string[]> {
  const client = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
  try {
    return await client.keys('{demo}:*');
  } finally {
    client.disconnect();
  }
}

function run(
  command: string,
  args: string[],
  extraEnv: Record<string, string> = {},
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(command, args, { cwd: ROOT, env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** The printed CLI commands: the lines that set the CLI's settings and run `npm run cli`. */
const cliLines = (output: string) =>
  output
    .split('\n')
    .filter((l) => / npm run cli -- /.test(l) && /^ {2}QUEUE_PREFIX=/.test(l))
    .map((l) => l.trim());

describe('npm run demo', () => {
  it('DEMO_EXIT=1: exits 0 after running each ready command (each exits 0), prints nothing live, keeps the service log apart, removes its keys', async () => {
    const demo = run('npm', ['run', 'demo'], { DEMO_EXIT: '1' });
    const code = await demo.exited;
    const out = demo.output();
    expect({ code, tail: out.slice(-3000) }).toEqual({ code: 0, tail: out.slice(-3000) });

    const commands = cliLines(out);
    const shapes = [
      / queues$/,
      / dlq list --target ledger$/,
      / event --request-id REQ\w+$/,
      / dlq replay ledger\/evt_[0-9a-f]{40}$/,
      / event resend evt_[0-9a-f]{40} --target ledger$/,
      / event evt_[0-9a-f]{40}$/,
      / event evt_[0-9a-f]{40}$/,
    ];
    expect(commands).toEqual(shapes.map((shape) => expect.stringMatching(shape)));
    for (const c of commands)
      expect(c).toMatch(/^QUEUE_PREFIX=demo CONFIG_FILE=\.demo\/config\.yaml REDIS_URL=redis:\/\/\S+ npm run cli -- /);
    expect(out.match(/^ {4}exit (\d+)$/gm)).toEqual(commands.map(() => '    exit 0'));
    // The story of the replayed dead letter, as the last commands printed it.
    expect(out).toMatch(/series 2: replay\s+by cli:/);
    expect(out).toMatch(/series 2: resend\s+by cli:/);
    // Nothing that needs the service that has exited: no dashboard, no API calls, no "keeps running".
    expect(out).not.toMatch(/events console:|Bull Board|curl |Ctrl-C|keeps running/);
    // The service's JSON lines are in its log file, not among the demo's lines.
    expect(out.split('\n').filter((l) => l.startsWith('{'))).toEqual([]);
    expect(readFileSync(path.join(ROOT, '.demo/service.log'), 'utf8')).toMatch(/"message":"receiver listening"/);
    expect(await demoKeys()).toEqual([]);
  });

  it('kept running: every printed CLI command, run as printed, exits 0; the console finds an event by request_id; a SIGTERM stops it, its service too, and removes its keys', async () => {
    const demo = run(process.execPath, ['dist/src/demo/main.js']);
    const deadline = Date.now() + 90000;
    while (!/Ctrl-C stops/.test(demo.output())) {
      if (Date.now() > deadline || demo.child.exitCode !== null)
        throw new Error(`the demo did not get ready:\n${demo.output()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    try {
      const out = demo.output();
      const commands = cliLines(out);
      expect(commands).toHaveLength(7);
      for (const command of commands) {
        const shell = run('sh', ['-c', command]);
        const status = await shell.exited;
        expect({ command, status, output: status === 0 ? '' : shell.output() }).toEqual({
          command,
          status: 0,
          output: '',
        });
      }
      // Then the admin API's block, labelled as the same operations by another route, run in order after
      // the CLI's: none fails or answers notFound.
      expect(out).toContain('the same operations by another route, the admin API (alternatives to the commands above');
      const apiCommands = out
        .split('\n')
        .filter((l) => /^ {2}curl -s /.test(l))
        .map((l) => l.trim());
      expect(apiCommands).toHaveLength(5);
      for (const command of apiCommands) {
        const shell = run('sh', ['-c', `${command} -w '\nHTTP %{http_code}'`]);
        const status = await shell.exited;
        const output = shell.output();
        expect({ command, status, http: /HTTP (\d+)$/.exec(output)?.[1] }).toEqual({ command, status: 0, http: '200' });
        expect({ command, notFound: /"notFound":\[[^\]]/.test(output) }).toEqual({ command, notFound: false });
      }
      // The API's event view, as printed (with the admin token and port).
      const view = out.split('\n').find((l) => /^ {2}curl .*\/admin\/api\/events\/evt_/.test(l));
      expect(view).toBeDefined();
      const viewed = run('sh', ['-c', view!.trim()]);
      expect(await viewed.exited).toBe(0);
      const body = JSON.parse(viewed.output()) as { deliveries: { target: string; series: { trigger: string }[] }[] };
      expect(body.deliveries.find((d) => d.target === 'ledger')?.series.map((s) => s.trigger)).toEqual([
        'received',
        'replay',
      ]);
      // The events console, with the credentials printed, finds the dead-lettered event by its request_id.
      const [, consoleUrl, password] = /events console: (\S+) {2}\(user admin, password (\S+)\):/.exec(out) ?? [];
      const requestId = /event --request-id (REQ\w+)$/m.exec(out)?.[1];
      const page = await fetch(`${consoleUrl}/events?q=${requestId}`, {
        headers: { authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}` },
      });
      expect(page.status).toBe(200);
      const deadLettered = /dlq replay ledger\/(evt_[0-9a-f]{40})$/m.exec(out)?.[1];
      expect(deadLettered).toBeDefined();
      expect(await page.text()).toContain(deadLettered);
    } finally {
      demo.child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([demo.exited, new Promise((r) => (timer = setTimeout(r, 20000)))]);
      clearTimeout(timer);
      await stopChild(demo.child, 1000);
    }
    expect(demo.child.exitCode).toBe(0);
    expect(await demoKeys()).toEqual([]);
    // Its service stopped with it: nothing answers on the public port the demo printed.
    const servicePort = Number(/service is up at http:\/\/127\.0\.0\.1:(\d+)/.exec(demo.output())?.[1]);
    expect(servicePort).toBeGreaterThan(0);
    await expect(fetch(`http://127.0.0.1:${servicePort}/healthz`)).rejects.toThrow();
  });
});
