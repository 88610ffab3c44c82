import { stringify } from 'yaml';
import { loadApiEnvironments } from '../../config/api-environments';
import { loadEnvironments } from '../../config/keys';
import { inquiryFunctionProblems } from '../../reconciliation/functions';
import { loadConfigDetailed } from '../../config/load';
import { describeRedis, maskSecrets } from '../../config/describe';
import { envWarnings } from '../../config/env-warnings';
import { configWarnings } from '../../config/warnings';
import { credentialWarnings } from '../../config/credential-warnings';
import { checkRedisDurability, durabilityWarnings } from '../../monitoring/redis-durability';
import type { Config } from '../../config/schema';
import { createRedisConnector } from '../../redis/connect';
import { describeSources } from '../operator-config';
import { probeDestination } from '../../forwarding/destinations/probe';
import { ConfigError } from '../../config/errors';
import type { Target } from '../../model/target-schema';
import { transformProblems } from '../../transform/check';
import { parseArgs } from 'node:util';
import { createLogger } from '../../logging/logger';
import { bodiesFromDir, printTrials, quarantinedBodies, sampleBodies, type LabelledBody } from './trial-report';

type Out = (line: string) => void;

/** Asks the configured Redis how it keeps data; a Redis that cannot be asked is a warning, not a failure. */
async function redisWarnings(config: Config, where: string): Promise<string[]> {
  const redis = createRedisConnector(config).open('operator');
  redis.on('error', () => undefined); // the failed command below reports it
  try {
    const nodes = await checkRedisDurability(redis);
    // A single Redis is named as configured; each master of a cluster by its own address.
    return nodes.flatMap((d) => durabilityWarnings(d, nodes.length === 1 ? where : d.node));
  } catch (err) {
    return [
      `could not ask Redis at ${where} about persistence and eviction (${(err as Error).message}): check appendonly ` +
        `yes and maxmemory-policy noeviction yourself`,
    ];
  } finally {
    redis.disconnect();
  }
}

/** The bodies `config check` tries: the samples, and those of `--bodies DIR` and `--from-quarantine`. */
async function bodiesToTry(config: Config, args: string[], log: NodeJS.WritableStream): Promise<LabelledBody[]> {
  const { values } = parseArgs({
    args,
    options: { bodies: { type: 'string' }, 'from-quarantine': { type: 'boolean', default: false } },
  });
  return [
    ...sampleBodies(config),
    ...(values.bodies !== undefined ? bodiesFromDir(config, values.bodies) : []),
    ...(values['from-quarantine'] ? await quarantinedBodies(config, createLogger(config.logLevel, log)) : []),
  ];
}

/**
 * `config check [--bodies DIR] [--from-quarantine]`: reads the configuration exactly as the service
 * would (a problem, a transform that does not compile included, exits 78 with the reasons), then
 * prints it with secrets masked; what the service would do with each sample (and each given or
 * quarantined body): accepted or not by its environment's rule, and per target delivered, filtered,
 * or the transform's output; whether each broker destination is reachable (and, for NATS, whether a
 * stream captures its subjects); and what is valid but risky.
 */
export async function configCheckCommand(
  env: Record<string, string | undefined>,
  out: Out,
  args: string[] = [],
  log: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  const loaded = loadConfigDetailed(env);
  const { config } = loaded;
  if (config.role !== 'worker') loadEnvironments(config);
  out(`configuration is valid; ${describeSources(loaded)}`);
  out('');
  out('effective configuration (secrets masked):');
  // A transform is shown as written (file:<path> or its source), not the file's text again.
  const shown = { ...config, targets: config.targets.map(({ transformSource: _text, ...t }: Target) => t) };
  out(stringify(maskSecrets(shown)).trimEnd().replace(/^/gm, '  '));
  const transformProblemsFound = await transformProblems(config.targets);
  if (transformProblemsFound.length) throw new ConfigError(transformProblemsFound);
  // The merchant's key and the inquiry functions, read and compiled as the workers would.
  const inquiryProblems = await inquiryFunctionProblems(loadApiEnvironments(config, env));
  if (inquiryProblems.length) throw new ConfigError(inquiryProblems);
  const bodies = await bodiesToTry(config, args, log);
  out('');
  out("the samples and bodies as the service would take them (the environment's accept rule, then each target):");
  const failedSamples = await printTrials(config, bodies, out);
  const warnings = [
    ...envWarnings(env),
    ...loaded.warnings,
    ...configWarnings(config),
    ...credentialWarnings(config, env),
    ...failedSamples,
    ...(await redisWarnings(config, describeRedis(config))),
  ];
  const brokers = config.targets.flatMap((t) => (t.destination ? [{ target: t, destination: t.destination }] : []));
  if (brokers.length) {
    out('');
    out('destinations:');
    const probes = await Promise.all(brokers.map(({ target, destination }) => probeDestination(target, destination)));
    brokers.forEach(({ target, destination }, i) => {
      const { ok, line } = probes[i]!;
      out(`  - ${target.name} (${destination.type}): ${line}`);
      if (!ok) warnings.push(`target ${target.name}: its ${destination.type} destination is ${line}`);
    });
    // A table every delivery would fail on (missing, a column short) is an error, as it is at start-up.
    const problems = probes.flatMap((p, i) =>
      (p.problems ?? []).map((q) => `target "${brokers[i]!.target.name}": ${q}`),
    );
    if (problems.length) throw new ConfigError(problems);
  }
  out('');
  out(warnings.length ? `${warnings.length} warning${warnings.length === 1 ? '' : 's'}:` : 'no warnings');
  for (const w of warnings) out(`  - ${w}`);
  return 0;
}
