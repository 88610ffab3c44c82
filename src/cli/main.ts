#!/usr/bin/env node
import { createWriteStream } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { cliFailure } from './errors';
import { runCli } from './run';
import { startTracing } from '../tracing/start';

/**
 * Where the CLI's log lines (the audit line of every change among them) go: `CLI_AUDIT_LOG` when set;
 * else stderr when it is not a terminal (a wrapper or a job runner keeps it); else, so they do not land
 * in the middle of the command's output, `~/.webhook-receiver-audit.log`.
 */
function logFile(env: NodeJS.ProcessEnv): string | undefined {
  return env.CLI_AUDIT_LOG || (process.stderr.isTTY ? path.join(homedir(), '.webhook-receiver-audit.log') : undefined);
}

// With OTEL_* set as for the service, an operator's resend or replay is a span linked to the event's trace.
async function main(): Promise<number> {
  const tracing = await startTracing(process.env, (_key, message, fields) =>
    process.stderr.write(`${message} ${JSON.stringify(fields)}\n`),
  );
  const file = logFile(process.env);
  const log = file ? createWriteStream(file, { flags: 'a', mode: 0o600 }) : undefined;
  try {
    return await runCli(process.argv.slice(2), {
      env: process.env,
      out: (line) => process.stdout.write(`${line}\n`),
      err: (line) => process.stderr.write(`${line}\n`),
      ...(log ? { log } : {}),
    });
  } finally {
    // Written out before the process exits (process.exit would drop what is still buffered).
    if (log) await new Promise((resolve) => log.end(resolve));
    await tracing?.shutdown().catch(() => undefined);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    const { line, exitCode } = cliFailure(err);
    process.stderr.write(`${line}\n`);
    process.exit(exitCode);
  },
);
