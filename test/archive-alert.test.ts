import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { tempDir } from './support/temp-dir';

/**
 * The example alert on the archive's backlog, run by Prometheus's own rule tester: a backlog whose
 * oldest entry keeps ageing past ten minutes pages; one that drains does not.
 */

const PROMTOOL = process.env.PROMTOOL_PATH ?? '/usr/bin/promtool';
const RULES = path.resolve(__dirname, '../config/alerts.yml');

it('WebhookArchiveBehind fires when the oldest archive entry stays older than 10 minutes, not when the backlog drains', () => {
  expect(existsSync(PROMTOOL)).toBe(true);
  const dir = tempDir('archive-alert');
  const tests = path.join(dir, 'archive-alert-test.yml');
  writeFileSync(
    tests,
    stringify({
      rule_files: [RULES],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: [
            // PostgreSQL down: the oldest entry ages a minute a minute.
            { series: 'webhook_archive_backlog_age_seconds{instance="worker-1"}', values: '0+60x30' },
            // A burst that drains within minutes.
            { series: 'webhook_archive_backlog_age_seconds{instance="worker-2"}', values: '0 120 240 0 0 0 0 0 0 0' },
          ],
          alert_rule_test: [
            { eval_time: '9m', alertname: 'WebhookArchiveBehind', exp_alerts: [] },
            {
              eval_time: '20m',
              alertname: 'WebhookArchiveBehind',
              exp_alerts: [
                {
                  exp_labels: { severity: 'page' },
                  exp_annotations: {
                    summary: 'The evidence archive is 20m 0s behind',
                    description:
                      'Acknowledged notifications wait in the archive stream in Redis (webhook_archive_backlog) ' +
                      "instead of reaching PostgreSQL. /readyz says the archive's state; the worker's log says why " +
                      '(archive: ... failed). They are written, exactly once, when PostgreSQL is back.',
                  },
                },
              ],
            },
          ],
        },
      ],
    }),
  );
  const run = spawnSync(PROMTOOL, ['test', 'rules', tests], { encoding: 'utf8' });
  expect(`${run.stdout}${run.stderr}`).toContain('SUCCESS');
  expect(run.status).toBe(0);
});
