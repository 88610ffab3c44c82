import { UsageError } from '../errors';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfigDetailed } from '../../config/load';
import type { Config } from '../../config/schema';
import { buildRequest } from '../../forwarding/build-request';
import { createSigner } from '../../forwarding/signer';
import { maskHeaders } from '../../logging/mask-headers';
import { maskUrl } from '../../logging/mask-url';
import { DEFAULT_ENVIRONMENT } from '../../model/environments';
import { EVENT_TYPES, type EventType } from '../../model/event-table';
import { eventIdFor } from '../../model/ids';
import { toDeliveryJob, type DeliveryFields } from '../../model/jobs';
import { subscribes, type Target } from '../../model/target-schema';
import { sampleBody } from '../../signing/samples';
import { tryTransform } from '../../transform/check';
import type { TransformInput } from '../../transform/sandbox';
import type { OperatorContext } from '../operator-context';
import { withQueues } from '../with-queues';

type Out = (line: string) => void;

function inputOf(
  event: Pick<
    DeliveryFields,
    'eventId' | 'eventType' | 'receivedAt' | 'environment' | 'merchantId' | 'rawBody' | 'rawBodyEncoding'
  >,
): TransformInput {
  const raw = event.rawBodyEncoding === 'utf8' ? event.rawBody : Buffer.from(event.rawBody, 'base64').toString('utf8');
  return {
    event: {
      id: event.eventId,
      type: event.eventType,
      timestamp: event.receivedAt,
      environment: event.environment ?? null,
      merchantId: event.merchantId ?? null,
    },
    raw,
  };
}

/** A received event made from a body and a type, as the receiver would store it (no signature headers). */
function eventFromBody(type: EventType, body: string, environment: string): DeliveryFields {
  return {
    eventId: eventIdFor(type, environment, Buffer.from(body)),
    eventType: type,
    receivedAt: new Date().toISOString(),
    path: '',
    rawBody: body,
    rawBodyEncoding: 'utf8',
    signatureHeaders: {},
    environment,
  };
}

/**
 * `config check`'s part: each target's transform run on the built-in sample of every event type it
 * subscribes to, with what it would send or the error. Returns the failures, as warnings.
 */
export async function transformSamples(config: Config, out: Out): Promise<string[]> {
  const targets = config.targets.filter((t) => t.transform !== undefined);
  if (targets.length === 0) return [];
  const warnings: string[] = [];
  const environment = config.environments
    ? (Object.keys(config.environments)[0] ?? DEFAULT_ENVIRONMENT)
    : DEFAULT_ENVIRONMENT;
  out('');
  out('transforms on the built-in samples:');
  for (const target of targets) {
    const types = EVENT_TYPES.filter((type) => subscribes(target, type));
    const results = await tryTransform(
      target,
      types.map((type) => inputOf(eventFromBody(type, sampleBody(type), target.environments?.[0] ?? environment))),
    );
    types.forEach((type, i) => {
      const r = results[i]!;
      if ('error' in r) {
        out(`  ${target.name} ${type}: error: ${r.error}`);
        warnings.push(`target ${target.name}'s transform fails on the ${type} sample: ${r.error}`);
      } else {
        out(`  ${target.name} ${type}: ${r.body === null ? 'null (dropped: nothing sent)' : r.body}`);
      }
    });
  }
  return warnings;
}

/**
 * `transform test --target NAME (--event <event id> | --file body.json --type <event type>)`: what
 * the target would be sent for that event (headers, signature masked, and body), or the error.
 */
export async function transformTestCommand(
  env: Record<string, string | undefined>,
  args: string[],
  out: Out,
  operator: () => OperatorContext,
): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      target: { type: 'string' },
      event: { type: 'string' },
      file: { type: 'string' },
      type: { type: 'string' },
    },
  });
  if (!values.target)
    throw new UsageError(
      'name the target: transform test --target NAME (--event <event id> | --file body.json --type <event type>)',
    );
  if ((values.event === undefined) === (values.file === undefined))
    throw new UsageError('give either --event <event id> or --file body.json --type <event type>');
  if (values.event !== undefined) {
    const ctx = operator();
    const target = targetNamed(ctx.config, values.target);
    const eventId = values.event;
    return withQueues(ctx.config, async (pipeline) => {
      const found = await pipeline.findEvent(eventId);
      if (!found) throw new UsageError(`no event ${eventId} (not found in the queues: unknown, or past its retention)`);
      return show(target, found.job.data, out);
    });
  }
  const type = values.type as EventType | undefined;
  if (!type || !EVENT_TYPES.includes(type)) throw new UsageError(`--type is one of ${EVENT_TYPES.join(', ')}`);
  const config = loadConfigDetailed({ ...env, ROLE: 'worker' }).config;
  const target = targetNamed(config, values.target);
  const body = readFileSync(values.file!, 'utf8');
  return show(target, eventFromBody(type, body, target.environments?.[0] ?? DEFAULT_ENVIRONMENT), out);
}

function targetNamed(config: Config, name: string): Target {
  const target = config.targets.find((t) => t.name === name);
  if (!target)
    throw new UsageError(
      `no target named ${name} (configured: ${config.targets.map((t) => t.name).join(', ') || 'none'})`,
    );
  return target;
}

async function show(target: Target, event: DeliveryFields, out: Out): Promise<number> {
  let transformed: string | undefined;
  if (target.transform === undefined) {
    out(`target ${target.name} has no transform: it is sent the standard envelope`);
  } else {
    const [result] = await tryTransform(target, [inputOf(event)]);
    if (!result || 'error' in result) {
      out(`transform_error: ${result?.error ?? 'no result'}`);
      return 1;
    }
    if (result.body === null) {
      out(`dropped: the transform returned null; nothing would be sent to ${target.name}`);
      return 0;
    }
    transformed = result.body;
  }
  const req = buildRequest(toDeliveryJob(event, target.name), target, createSigner(target), new Date(), transformed);
  out(`POST ${maskUrl(target.url ?? '')}`);
  for (const [name, value] of Object.entries(maskHeaders(req.headers))) out(`${name}: ${value}`);
  out('');
  out(typeof req.body === 'string' ? req.body : req.body.toString('utf8'));
  return 0;
}
