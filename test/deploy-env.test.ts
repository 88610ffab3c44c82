import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from './support/temp-dir';

const ROOT = path.resolve(__dirname, '..');
const EXAMPLE = path.join(ROOT, 'deploy/env.example');

function bash(script: string, cwd: string): string {
  return execFileSync('bash', ['-c', script], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The compose guide's line that writes the admin token for Prometheus, exactly as docs/deploy.md prints it. */
function secretLine(): string {
  const guide = readFileSync(path.join(ROOT, 'docs/deploy.md'), 'utf8');
  const line = guide.split('\n').find((l) => l.startsWith('mkdir -p .secrets'));
  if (!line) throw new Error('docs/deploy.md has no line starting "mkdir -p .secrets"');
  return line.replace(/\s+#.*$/, '');
}

describe('deploy/env.example and the compose guide', () => {
  it('is valid shell: bash -n passes and sourcing it sets the three settings', () => {
    execFileSync('bash', ['-n', EXAMPLE]);
    const out = bash(
      `set -eu; . '${EXAMPLE}'; printf '%s\\n' "$REDIS_PASSWORD" "$ADMIN_TOKEN" "$PLATFORM_PUBLIC_KEYS"`,
      ROOT,
    );
    const [redisPassword, adminToken, keys] = out.split('\n');
    expect(redisPassword).toMatch(/^\S{16,}$/);
    expect(adminToken).toMatch(/^\S{16,}$/);
    expect(keys).toMatch(/^MIIB\S+$/);
  });

  it("the guide's secret-writing line, run in a copy, writes .secrets/admin-token with the token", () => {
    const dir = tempDir('deploy-env');
    copyFileSync(EXAMPLE, path.join(dir, '.env'));
    bash(`set -e; ${secretLine()}`, dir);
    const token = bash(`. ./.env && printf %s "$ADMIN_TOKEN"`, dir);
    expect(token.length).toBeGreaterThanOrEqual(16);
    expect(readFileSync(path.join(dir, '.secrets/admin-token'), 'utf8')).toBe(token);
  });

  it('the secret-writing line fails loudly, writing nothing, when .env is not valid shell', () => {
    const dir = tempDir('deploy-env-bad');
    copyFileSync(EXAMPLE, path.join(dir, '.env'));
    execFileSync('bash', ['-c', `printf "NOTE=the platform's key\\n" >> .env`], { cwd: dir });
    expect(() => bash(`set -e; ${secretLine()}`, dir)).toThrow();
    expect(existsSync(path.join(dir, '.secrets/admin-token'))).toBe(false);
  });

  it('the compose guide names the compose plugin and what to do with docker-compose v1', () => {
    const guide = readFileSync(path.join(ROOT, 'docs/deploy.md'), 'utf8');
    expect(guide).toMatch(/docker-compose-plugin|docker-compose-v2/);
    expect(guide).toMatch(/docker-compose` v1/);
  });

  it('every variable compose.yaml requires is in the env example and in the compose guide, the console and Grafana included', () => {
    const compose = readFileSync(path.join(ROOT, 'compose.yaml'), 'utf8');
    const required = [...new Set([...compose.matchAll(/\$\{([A-Z_]+):\?/g)].map((m) => m[1]!))].sort();
    expect(required).toEqual(
      expect.arrayContaining(['ADMIN_PASSWORD', 'ADMIN_USER', 'CALLBACK_BASE_PATH', 'GRAFANA_ADMIN_PASSWORD']),
    );
    const example = readFileSync(EXAMPLE, 'utf8');
    const guide = readFileSync(path.join(ROOT, 'docs/deploy.md'), 'utf8');
    const composeSection = guide.slice(guide.indexOf('## Compose'));
    for (const name of required) {
      expect({ name, inExample: new RegExp(`^${name}=\\S+$`, 'm').test(example) }).toEqual({ name, inExample: true });
      expect({ name, inGuide: composeSection.includes(`\`${name}\``) }).toEqual({ name, inGuide: true });
    }
  });
});
