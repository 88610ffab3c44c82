import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Queue } from 'bullmq';
import { stringify } from 'yaml';
import { keygen, KEY_FILES } from '../cli/commands/keygen';
import { sendNotification, type SendOptions, type SendResult } from '../cli/commands/send';
import { projectRoot } from '../config/project-root';
import { EVENT_TYPES } from '../model/event-table';
import { freePort, isPortFree, isRedisReachable, RedisServer } from './redis-server';
import { stopChild } from './stop-child';
import { deliveryQueueName, keyPrefix } from '../model/names';
import { resetPrefix } from './local-redis';
import { startMerchantSystem } from './merchant-system';
import { apiCommands, cliCommands, type DemoFacts, type ReadyCommand } from './ready-commands';

const DEMO_PREFIX = 'demo';
const LEDGER = 'ledger';

/**
 * The quick-start demo: a Redis (the reachable one, or a throwaway local one), a fresh test key pair,
 * the service with two targets (a merchant system that takes everything, and a ledger that refuses the
 * first attempts of payment.result, so a retry and a dead letter happen), one signed sample
 * notification of each type, a replay and a legacy-scheme one; then ready-to-paste commands for the
 * operations that follow (event lookup, dead letters, replay, resend). The service keeps running
 * until Ctrl-C; with DEMO_EXIT=1 the demo runs those CLI commands itself and exits. Either way the
 * demo's keys are removed from Redis at exit. The service's own log lines go to .demo/service.log.
 */
async function main(): Promise<number> {
  const say = (line: string) => process.stdout.write(`[demo] ${line}\n`);
  const exitWhenDone = process.env.DEMO_EXIT === '1';
  const root = projectRoot();
  const demoDir = path.join(root, '.demo');
  mkdirSync(demoDir, { recursive: true });

  // Undone in reverse order of setup: the service first (it drains), then the demo's keys, then the
  // Redis the demo started, if any.
  const cleanups: (() => Promise<void>)[] = [];
  let cleaned: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaned ??= (async () => {
      for (const step of cleanups.reverse()) await step().catch((err: Error) => say(`clean-up: ${err.message}`));
    })());
  // Ctrl-C, and a stop from outside (`kill`, `timeout`, a closed terminal): either way the service the
  // demo started stops with it, rather than being left running on the demo's ports and prefix.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      void cleanUp().then(() => process.exit(0));
    });
  }

  try {
    let redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    if (await isRedisReachable(redisUrl)) {
      const removed = await resetPrefix(redisUrl, keyPrefix(DEMO_PREFIX));
      say(
        `using the Redis at ${redisUrl}; the demo's keys live under ${keyPrefix(DEMO_PREFIX)}: (${removed} left from ` +
          `an earlier run removed; removed again at exit)`,
      );
      const shared = redisUrl;
      cleanups.push(async () => {
        const n = await resetPrefix(shared, keyPrefix(DEMO_PREFIX));
        say(`removed the demo's ${n} keys from ${shared}`);
      });
    } else {
      const local = await RedisServer.start();
      cleanups.push(() => local.stop());
      say(`no Redis reachable at ${redisUrl}: started a throwaway redis-server at ${local.url} (nothing is kept)`);
      redisUrl = local.url;
    }

    const keyDir = path.join(demoDir, 'keys');
    mkdirSync(keyDir, { recursive: true });
    keygen(keyDir, (l) => say(l));

    let port = Number(process.env.PORT ?? 8080);
    if (!(await isPortFree(port))) {
      const busy = port;
      port = await freePort();
      say(`port ${busy} is taken: the service listens on ${port} instead`);
    }
    const merchantId = 'M100023';
    const merchantSystem = await startMerchantSystem(say);
    // The ledger refuses payment.result: the first event it sees twice (its two attempts: a dead
    // letter), the second once (delivered on the retry). A replay or resend later goes through.
    const refusals: string[] = [];
    const ledger = await startMerchantSystem(say, 'ledger', (type, id, before) => {
      if (type !== 'payment.result') return false;
      if (!refusals.includes(id) && refusals.length < 2) refusals.push(id);
      const allowed = [2, 1][refusals.indexOf(id)] ?? 0;
      return before < allowed;
    });
    cleanups.push(async () => {
      merchantSystem.server.close();
      ledger.server.close();
    });
    const adminPort = (await isPortFree(9090)) ? 9090 : await freePort();
    const adminToken = randomBytes(18).toString('base64url');
    const configFile = path.join(demoDir, 'config.yaml');
    const secret = () => `whsec_${randomBytes(24).toString('base64')}`;
    writeFileSync(
      configFile,
      stringify({
        targets: [
          { name: 'merchant-system', url: merchantSystem.url, events: ['*'], secret: secret() },
          {
            name: LEDGER,
            url: ledger.url,
            events: ['payment.result'],
            secret: secret(),
            maxAttempts: 2,
            backoff: { initialMs: 300, maxMs: 600 },
          },
        ],
      }),
    );

    const logFile = path.join(demoDir, 'service.log');
    const log = openSync(logFile, 'w');
    // Run the service the way the demo itself runs: built (npm run demo), or through ts-node (tests).
    const fromSource = __filename.endsWith('.ts');
    const entry = fromSource
      ? ['-r', 'ts-node/register', path.join(root, 'src', 'main.ts')]
      : [path.join(root, 'dist', 'src', 'main.js')];
    const service = spawn(process.execPath, entry, {
      cwd: root,
      stdio: ['ignore', log, log],
      env: {
        ...process.env,
        ...(fromSource ? { TS_NODE_SWC: 'true' } : {}),
        PORT: String(port),
        REDIS_URL: redisUrl,
        QUEUE_PREFIX: DEMO_PREFIX,
        PLATFORM_PUBLIC_KEYS: `file:${path.join(keyDir, KEY_FILES.publicKeyBase64)}`,
        SIGNATURE_SCHEMES: 'current,legacy',
        MERCHANT_ID: merchantId,
        CONFIG_FILE: configFile,
        ADMIN_PORT: String(adminPort),
        ADMIN_TOKEN: adminToken,
        ADMIN_USER: 'admin',
        ADMIN_PASSWORD: adminToken,
      },
    });
    closeSync(log);
    cleanups.push(async () => {
      await stopChild(service);
    });
    service.on('exit', (code) => {
      if (code !== 0 && code !== null)
        say(`the service exited with code ${code}: see ${path.relative(process.cwd(), logFile)}`);
    });
    say(
      `the service's own JSON log lines go to ${path.relative(process.cwd(), logFile)} (tail -f it in another ` +
        `terminal), not here`,
    );

    const url = `http://127.0.0.1:${port}`;
    await waitForHealth(url);
    say(
      `service is up at ${url}, forwarding to the merchant system (every type) and the ledger (payment.result); ` +
        `sending signed samples:`,
    );

    const base: SendOptions = {
      url,
      keyFile: path.join(keyDir, KEY_FILES.privateKey),
      scheme: 'current',
      headerPrefix: 'x-svc',
      basePath: '',
      times: 1,
    };
    const sent: SendResult[] = [];
    const rows: string[] = [];
    const row = (label: string, scheme: string, r: SendResult, note = `${r.status} ${r.body}`) =>
      rows.push(
        `${label.padEnd(28)} ${scheme.padEnd(8)} ${note}\n${''.padEnd(38)}event ` +
          `${r.eventId}${r.requestId ? `  request_id ${r.requestId}` : ''}`,
      );
    for (const type of EVENT_TYPES) {
      for (const r of await sendNotification(type, base)) {
        sent.push(r);
        row(type, 'current', r);
      }
    }
    const replay = await sendNotification('payment.result', { ...base, times: 2 });
    sent.push(...replay);
    row(
      'payment.result (sent twice)',
      'current',
      replay[0]!,
      `${replay.map((r) => r.status).join(', ')}: the second is a replay, queued once`,
    );
    for (const r of await sendNotification('remittance.incoming', { ...base, scheme: 'legacy', merchantId })) {
      sent.push(r);
      row('remittance.incoming', 'v1.2', r);
    }
    process.stdout.write(`\n${rows.join('\n')}\n\n`);
    if (sent.some((r) => r.status !== 200)) throw new Error('a sample was not acknowledged (200)');

    const expected = EVENT_TYPES.length + 2;
    await waitFor(() => merchantSystem.received() >= expected && ledger.requests() >= 4, 15000);
    const queue = new Queue(deliveryQueueName(LEDGER), {
      connection: { url: redisUrl },
      prefix: keyPrefix(DEMO_PREFIX),
    });
    try {
      await waitFor(async () => {
        const counts = await queue.getJobCounts('failed', 'completed');
        return (counts.failed ?? 0) >= 1 && (counts.completed ?? 0) >= 1;
      }, 15000);
    } finally {
      await queue.close();
    }
    say(
      `the merchant system received ${merchantSystem.received()} events for ${expected + 1} notifications sent (the ` +
        `replay was queued once)`,
    );
    const [deadId, retriedId] = refusals;
    if (!deadId || !retriedId) throw new Error('the ledger did not see two payment.result events');
    say(
      `the ledger refused payment.result ${deadId} twice (a dead letter) and ${retriedId} once (delivered on the ` +
        `retry)`,
    );

    const adminUrl = `http://127.0.0.1:${adminPort}`;
    const facts: DemoFacts = {
      redisUrl,
      queuePrefix: DEMO_PREFIX,
      configFile: path.relative(root, configFile),
      adminUrl,
      adminToken,
      target: LEDGER,
      deadLetter: { eventId: deadId, requestId: sent.find((r) => r.eventId === deadId)?.requestId },
      delivered: { eventId: retriedId },
    };

    if (exitWhenDone) {
      say(
        'ready commands, from the project directory (DEMO_EXIT=1: the demo runs each one here, then exits; `npm run ' +
          'demo` keeps the service up to try them):',
      );
      const failed = await runEach(cliCommands(facts), root, () => ledger.received());
      return failed ? 1 : 0;
    }
    say('ready commands, from the project directory, while the demo runs:');
    printCommands(cliCommands(facts));
    say(
      'the same operations by another route, the admin API (alternatives to the commands above, not further ' +
        'steps; run after them, each still succeeds):',
    );
    printCommands(apiCommands(facts));
    say(
      `events console: ${adminUrl}/admin/console  (user admin, password ${adminToken}): search a request_id above, ` +
        `read each target's attempts, replay or resend`,
    );
    say(`raw queues (Bull Board): ${adminUrl}/admin/queues  (the same user)`);
    say(
      `send more: npm run cli -- send payment.result --url ${url} --key ${path.relative(process.cwd(), base.keyFile)}`,
    );
    say("Ctrl-C stops the service and removes the demo's keys.");
    await new Promise<never>(() => undefined);
    return 0;
  } catch (err) {
    await cleanUp();
    throw err;
  } finally {
    if (exitWhenDone) await cleanUp();
  }
}

function printCommands(commands: ReadyCommand[]): void {
  for (const c of commands) process.stdout.write(`\n  # ${c.what}\n  ${c.command}\n`);
  process.stdout.write('\n');
}

/** Runs each command through the shell as printed; prints its output and exit status. True when one failed. */
async function runEach(commands: ReadyCommand[], cwd: string, delivered: () => number): Promise<boolean> {
  let failed = false;
  for (const c of commands) {
    const before = delivered();
    process.stdout.write(`\n  # ${c.what}\n  ${c.command}\n`);
    // Not spawnSync: the ledger answering the deliveries a command starts lives in this process.
    const run = await shell(c.command, cwd);
    const output = run.output.trimEnd();
    if (output) process.stdout.write(`${output.replace(/^/gm, '    | ')}\n`);
    process.stdout.write(`    exit ${run.status}\n`);
    if (run.status !== 0) failed = true;
    // The next commands show what it started: wait until the ledger has taken the delivery.
    if (c.startsDelivery && run.status === 0) await waitFor(() => delivered() > before, 10000).catch(() => undefined);
  }
  process.stdout.write('\n');
  return failed;
}

function shell(command: string, cwd: string): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', command], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, npm_config_loglevel: 'silent' },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('close', (status) => resolve({ status, output }));
  });
}

async function waitFor(done: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function waitForHealth(url: string): Promise<void> {
  for (let i = 0; i < 150; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the service did not answer ${url}/healthz`);
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`[demo] failed: ${err.message}\n`);
    process.exit(1);
  },
);
