import { UsageError } from '../errors';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { environmentNames } from '../../model/environments';
import type { Config } from '../../config/schema';
import { EVENT_TYPES, type EventType } from '../../model/event-table';
import { createQuarantine } from '../../operations/quarantine';
import { targetTrialText, tryBody, type TrialBody } from '../../operations/trial';
import { sampleBody } from '../../signing/samples';
import type { Logger } from '../../logging/logger';
import { withQueues } from '../with-queues';

type Out = (line: string) => void;

/** A body to try, and where it came from (`sample`, a file's name, `quarantined <id>`). */
export interface LabelledBody extends TrialBody {
  from: string;
}

/** The built-in sample of every event type, once per configured environment. */
export function sampleBodies(config: Config): LabelledBody[] {
  return environmentNames(config).flatMap((environment) =>
    EVENT_TYPES.map((eventType) => ({ eventType, environment, body: sampleBody(eventType), from: 'sample' })),
  );
}

/** The event type a body file is named for: `<event type>.json`, or `<event type>` then `-`, `.` or `_` and more. */
function typeOfFile(name: string): EventType | undefined {
  return [...EVENT_TYPES]
    .sort((a, b) => b.length - a.length)
    .find((type) => name === `${type}.json` || (name.startsWith(type) && /^[-._]/.test(name.slice(type.length))));
}

/** Every body file of a folder (named for its event type), once per configured environment. */
export function bodiesFromDir(config: Config, dir: string): LabelledBody[] {
  const files = readdirSync(dir).sort();
  const bodies: LabelledBody[] = [];
  for (const name of files) {
    const eventType = typeOfFile(name);
    if (!eventType)
      throw new UsageError(`${path.join(dir, name)}: name a body file for its event type, e.g. payment.result-1.json`);
    const body = readFileSync(path.join(dir, name), 'utf8');
    for (const environment of environmentNames(config)) bodies.push({ eventType, environment, body, from: name });
  }
  return bodies;
}

/** The quarantined notifications, each in the environment and with the `X-Merch-Id` it arrived with. */
export function quarantinedBodies(config: Config, logger: Logger): Promise<LabelledBody[]> {
  return withQueues(config, async (pipeline) => {
    const jobs = await createQuarantine(pipeline, { logger }).bodies(1000);
    return jobs.map((q) => ({
      eventType: q.eventType,
      environment: q.environment ?? environmentNames(config)[0]!,
      body: q.body,
      ...(q.merchantId !== undefined ? { merchantId: q.merchantId } : {}),
      from: `quarantined ${q.id}`,
    }));
  });
}

/**
 * Prints, per body, whether its environment accepts it and what each subscribed target makes of it
 * (delivered, filtered, the transform's output or error). Returns a warning per transform failure.
 */
export async function printTrials(config: Config, bodies: readonly LabelledBody[], out: Out): Promise<string[]> {
  const warnings: string[] = [];
  for (const body of bodies) {
    const trial = await tryBody(config, body);
    const head = `  ${body.environment} ${body.eventType} ${body.from}`;
    if (trial.outcome === 'invalid') {
      out(`${head}: invalid (quarantined): ${trial.errors.join('; ')}`);
      continue;
    }
    if (trial.outcome === 'not_accepted') {
      out(`${head}: not_accepted (the ${trial.environment} environment's accept rule leaves it out; quarantined)`);
      continue;
    }
    out(`${head}: accepted${trial.targets.length ? '' : ' (no target takes its type)'}`);
    for (const t of trial.targets) {
      out(`    ${t.target}: ${targetTrialText(t)}`);
      if (t.outcome === 'transform_error')
        warnings.push(`target ${t.target}'s transform fails on the ${body.eventType} ${body.from}: ${t.error}`);
    }
  }
  return warnings;
}
