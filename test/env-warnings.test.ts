import { ENV_SETTINGS } from '../src/config/env';
import { envWarnings, mistypedEnv } from '../src/config/env-warnings';

describe('mistyped environment variables', () => {
  it('when a variable is one or two edits from a setting, or differs only in case, then it is named with the setting meant', () => {
    const found = mistypedEnv({
      REDIS_URI: 'redis://10.0.0.5:6379',
      log_level: 'debug',
      ADMIN_TOKN: 'x',
      PORTT: '8080',
      CONFIG_FIEL: '/etc/whr.yaml',
    });
    expect(found).toEqual([
      { variable: 'ADMIN_TOKN', didYouMean: 'ADMIN_TOKEN' },
      { variable: 'CONFIG_FIEL', didYouMean: 'CONFIG_FILE' },
      { variable: 'PORTT', didYouMean: 'PORT' },
      { variable: 'REDIS_URI', didYouMean: 'REDIS_URL' },
      { variable: 'log_level', didYouMean: 'LOG_LEVEL' },
    ]);
    expect(envWarnings({ REDIS_URI: 'redis://10.0.0.5:6379' })).toEqual([
      'environment variable REDIS_URI is not a setting and is ignored; did you mean REDIS_URL?',
    ]);
  });

  it('when the environment holds only settings and what a shell, npm, Docker or Kubernetes put there, then nothing is named', () => {
    const settings = Object.fromEntries(Object.keys(ENV_SETTINGS).map((name) => [name, 'x']));
    const around = {
      HOME: '/root',
      PATH: '/usr/bin',
      HOSTNAME: 'whr-7d9f',
      USER: 'node',
      PWD: '/app',
      TERM: 'xterm',
      LANG: 'C.UTF-8',
      SHLVL: '1',
      NODE_ENV: 'production',
      NODE_OPTIONS: '--enable-source-maps',
      NODE_VERSION: '24.1.0',
      YARN_VERSION: '1.22.22',
      npm_lifecycle_event: 'start',
      npm_package_name: 'webhook-receiver',
      npm_config_cache: '/root/.npm',
      INIT_CWD: '/app',
      // A Kubernetes service called "redis", and Docker's legacy links:
      REDIS_PORT: 'tcp://10.0.0.5:6379',
      REDIS_SERVICE_HOST: '10.0.0.5',
      REDIS_SERVICE_PORT: '6379',
      REDIS_PORT_6379_TCP_ADDR: '10.0.0.5',
      REDIS_NAME: '/whr/redis',
      KUBERNETES_SERVICE_HOST: '10.0.0.1',
      KUBERNETES_PORT: 'tcp://10.0.0.1:443',
    };
    expect(mistypedEnv({ ...settings, ...around, CONFIG_FILE: '/etc/whr.yaml' })).toEqual([]);
    expect(mistypedEnv(process.env)).toEqual([]);
  });
});
