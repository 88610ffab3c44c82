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
import { decodeRawBody, toDeliveryJob } from '../../model/jobs';
import type { Target } from '../../model/target-schema';
import { deliveryFieldsOf, targetTrialText, tryBody, type TrialBody } from '../../operations/trial';
import type { OperatorContext } from '../operator-context';
import { withQueues } from '../with-queues';

type Out = (line: string) => void;

/**
 * `transform test --target NAME (--event <event id> | --file body.json --type <event type>)`: the
 * service's steps for that body and target, in the service's order (the schema, the environment's
 * accept rule, the target's environments and filter, its transform), and where they stop; when the
 * target would be sent something, the request (headers, signature masked, and body).
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
      environment: { type: 'string' },
      'merchant-id': { type: 'string' },
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
      const data = found.job.data;
      const body = {
        eventType: data.eventType,
        environment: data.environment ?? DEFAULT_ENVIRONMENT,
        body: decodeRawBody(data).toString('utf8'),
        ...(data.merchantId !== undefined ? { merchantId: data.merchantId } : {}),
      };
      return show(ctx.config, target, body, out);
    });
  }
  const type = values.type as EventType | undefined;
  if (!type || !EVENT_TYPES.includes(type)) throw new UsageError(`--type is one of ${EVENT_TYPES.join(', ')}`);
  const config = loadConfigDetailed({ ...env, ROLE: 'worker' }).config;
  const target = targetNamed(config, values.target);
  const body = {
    eventType: type,
    environment: values.environment ?? target.environments?.[0] ?? DEFAULT_ENVIRONMENT,
    body: readFileSync(values.file!, 'utf8'),
    ...(values['merchant-id'] !== undefined ? { merchantId: values['merchant-id'] } : {}),
  };
  return show(config, target, body, out);
}

function targetNamed(config: Config, name: string): Target {
  const target = config.targets.find((t) => t.name === name);
  if (!target)
    throw new UsageError(
      `no target named ${name} (configured: ${config.targets.map((t) => t.name).join(', ') || 'none'})`,
    );
  return target;
}

async function show(config: Config, target: Target, body: TrialBody, out: Out): Promise<number> {
  const trial = await tryBody(config, body, [target]);
  if (trial.outcome === 'invalid') {
    out(`invalid: ${trial.errors.join('; ')}; the service quarantines it and sends ${target.name} nothing`);
    return 0;
  }
  if (trial.outcome === 'not_accepted') {
    out(`not_accepted: the ${trial.environment} environment's accept rule leaves it out; quarantined, nothing sent`);
    return 0;
  }
  const result = trial.targets[0];
  if (!result) {
    out(`not sent: ${target.name} does not subscribe to ${body.eventType}`);
    return 0;
  }
  if (result.outcome === 'transform_error') {
    out(`transform_error: ${result.error}`);
    return 1;
  }
  if (result.outcome !== 'delivered') {
    out(`${targetTrialText(result)}; nothing would be sent to ${target.name}`);
    return 0;
  }
  if (target.transform === undefined) out(`target ${target.name} has no transform: it is sent the standard envelope`);
  const event = deliveryFieldsOf(body);
  const req = buildRequest(
    toDeliveryJob(event, target.name),
    target,
    createSigner(target),
    new Date(),
    result.transformed,
  );
  out(
    `POST ${target.url !== undefined ? maskUrl(target.url) : `(${target.destination?.type ?? 'broker'} destination)`}`,
  );
  for (const [name, value] of Object.entries(maskHeaders(req.headers))) out(`${name}: ${value}`);
  out('');
  out(typeof req.body === 'string' ? req.body : req.body.toString('utf8'));
  return 0;
}
