#!/usr/bin/env node
import { ConfigError } from '../config/errors';
import { runCli } from './run';

runCli(process.argv.slice(2), {
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
}).then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`error: ${err.message}\n`);
    process.exit(err instanceof ConfigError ? 78 : 1);
  },
);
