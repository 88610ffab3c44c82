type Parse = (raw: string) => unknown;

const text: Parse = (raw) => raw;
const int: Parse = (raw) => (/^-?\d+$/.test(raw.trim()) ? Number(raw) : raw);
const bool: Parse = (raw) => (raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : raw);
const list: Parse = (raw) =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const intOrList: Parse = (raw) => (/^\d+$/.test(raw.trim()) ? Number(raw) : list(raw));

/** Environment variables that override the configuration, and the setting each one sets. */
export const ENV_SETTINGS: Record<string, { path: string[]; parse: Parse }> = {
  PORT: { path: ['port'], parse: int },
  HOST: { path: ['host'], parse: text },
  REDIS_URL: { path: ['redisUrl'], parse: text },
  REDIS_USERNAME: { path: ['redisUsername'], parse: text },
  REDIS_PASSWORD: { path: ['redisPassword'], parse: text },
  REDIS_TLS: { path: ['redisTls'], parse: bool },
  REDIS_TLS_CA_FILE: { path: ['redisTlsCaFile'], parse: text },
  REDIS_TLS_CERT_FILE: { path: ['redisTlsCertFile'], parse: text },
  REDIS_TLS_KEY_FILE: { path: ['redisTlsKeyFile'], parse: text },
  REDIS_SENTINELS: { path: ['redisSentinels'], parse: list },
  REDIS_SENTINEL_MASTER: { path: ['redisSentinelMaster'], parse: text },
  REDIS_SENTINEL_PASSWORD: { path: ['redisSentinelPassword'], parse: text },
  REDIS_CLUSTER_NODES: { path: ['redisClusterNodes'], parse: list },
  REDIS_MIN_REPLICAS_ACK: { path: ['redisMinReplicasAck'], parse: int },
  PLATFORM_PUBLIC_KEYS: { path: ['platformPublicKeys'], parse: list },
  PLATFORM_APP_ID: { path: ['platformAppId'], parse: text },
  MERCHANT_ID: { path: ['merchantId'], parse: text },
  SIGNATURE_HEADER_PREFIX: { path: ['signatureHeaderPrefix'], parse: text },
  SIGNATURE_SCHEMES: { path: ['signatureSchemes'], parse: list },
  TIMESTAMP_TOLERANCE_MS: { path: ['timestampToleranceMs'], parse: int },
  CALLBACK_BASE_PATH: { path: ['callbackBasePath'], parse: text },
  QUEUE_PREFIX: { path: ['queuePrefix'], parse: text },
  ENQUEUE_TIMEOUT_MS: { path: ['enqueueTimeoutMs'], parse: int },
  DEDUP_WINDOW_MS: { path: ['dedupWindowMs'], parse: int },
  BODY_LIMIT_BYTES: { path: ['bodyLimitBytes'], parse: int },
  MAX_CONNECTIONS: { path: ['maxConnections'], parse: int },
  MAX_CONNECTIONS_PER_SOURCE: { path: ['maxConnectionsPerSource'], parse: int },
  UNVERIFIED_BODY_BUDGET_BYTES: { path: ['unverifiedBodyBudgetBytes'], parse: int },
  PLATFORM_SOURCE_CIDRS: { path: ['platformSourceCidrs'], parse: list },
  TRUST_PROXY: { path: ['trustProxy'], parse: intOrList },
  LOG_LEVEL: { path: ['logLevel'], parse: text },
  LOG_REPEAT_INTERVAL_MS: { path: ['logRepeatIntervalMs'], parse: int },
  SHUTDOWN_TIMEOUT_MS: { path: ['shutdownTimeoutMs'], parse: int },
  ROLE: { path: ['role'], parse: text },
  ADMIN_PORT: { path: ['adminPort'], parse: int },
  ADMIN_HOST: { path: ['adminHost'], parse: text },
  ADMIN_TOKEN: { path: ['adminToken'], parse: text },
  ADMIN_USER: { path: ['adminUser'], parse: text },
  ADMIN_PASSWORD: { path: ['adminPassword'], parse: text },
  ADMIN_READ_ONLY_DASHBOARD: { path: ['adminReadOnlyDashboard'], parse: bool },
  ADMIN_ALLOW_CORRECTIONS: { path: ['adminAllowCorrections'], parse: bool },
  ADMIN_REQUEST_TIMEOUT_MS: { path: ['admin', 'requestTimeoutMs'], parse: int },
  ADMIN_HEADERS_TIMEOUT_MS: { path: ['admin', 'headersTimeoutMs'], parse: int },
  ADMIN_KEEP_ALIVE_TIMEOUT_MS: { path: ['admin', 'keepAliveTimeoutMs'], parse: int },
  ARCHIVE_URL: { path: ['archive', 'url'], parse: text },
  WORKER_LOCK_DURATION_MS: { path: ['worker', 'lockDurationMs'], parse: int },
  WORKER_STALLED_INTERVAL_MS: { path: ['worker', 'stalledIntervalMs'], parse: int },
  WORKER_SHUTDOWN_TIMEOUT_MS: { path: ['worker', 'shutdownTimeoutMs'], parse: int },
};

export function envOverrides(env: Record<string, string | undefined>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, { path, parse }] of Object.entries(ENV_SETTINGS)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    let node = out;
    for (const key of path.slice(0, -1)) node = (node[key] ??= {}) as Record<string, unknown>;
    node[path[path.length - 1] as string] = parse(raw);
  }
  return out;
}
