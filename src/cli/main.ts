#!/usr/bin/env node
import { cliFailure } from './errors';
import { runCli } from './run';

runCli(process.argv.slice(2), {
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
}).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const { line, exitCode } = cliFailure(err);
    process.stderr.write(`${line}\n`);
    process.exit(exitCode);
  },
);
