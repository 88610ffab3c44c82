#!/usr/bin/env node
import { cliFailure } from './errors';
import { runCli } from './run';
import { startTracing } from '../tracing/start';

// With OTEL_* set as for the service, an operator's resend or replay is a span linked to the event's trace.
async function main(): Promise<number> {
  const tracing = await startTracing(process.env, (_key, message, fields) =>
    process.stderr.write(`${message} ${JSON.stringify(fields)}\n`),
  );
  try {
    return await runCli(process.argv.slice(2), {
      env: process.env,
      out: (line) => process.stdout.write(`${line}\n`),
      err: (line) => process.stderr.write(`${line}\n`),
    });
  } finally {
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
