import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { CliProcess } from './support/cli-process';
import { testRedisUrl, uniquePrefix } from './support/harness';
import { tempDir } from './support/temp-dir';

// An audited CLI change prints its human line on stdout and its audit line in the log: with
// CLI_AUDIT_LOG, appended to that file, and nothing of it among the command's output.
it('target pause writes its audit line to CLI_AUDIT_LOG, not to the output', async () => {
  const dir = tempDir('cli-audit');
  const configFile = path.join(dir, 'config.yaml');
  writeFileSync(configFile, stringify({ targets: [{ name: 'ledger', url: 'http://127.0.0.1:9/x', events: ['*'] }] }));
  const auditLog = path.join(dir, 'audit.log');
  const cli = CliProcess.start(['target', 'pause', 'ledger'], {
    CONFIG_FILE: configFile,
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix(),
    CLI_AUDIT_LOG: auditLog,
  });
  const [code] = (await once(cli.child, 'close')) as [number];
  expect({ code, stderr: code === 0 ? '' : cli.stderr }).toEqual({ code: 0, stderr: '' });
  expect(cli.lines).toEqual(['ledger: paused']);
  expect(cli.stderr).not.toContain('"audit":true');
  const audit = readFileSync(auditLog, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(audit).toEqual([
    expect.objectContaining({ audit: true, message: 'admin action', action: 'target.pause', target: 'ledger' }),
  ]);
}, 60000);
