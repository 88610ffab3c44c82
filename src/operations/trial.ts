import { acceptTest, environmentsOf } from '../config/environments';
import type { Config } from '../config/schema';
import { eventDefinition, type EventType } from '../model/event-table';
import { eventIdFor } from '../model/ids';
import type { DeliveryFields } from '../model/jobs';
import { subscribes, type Target } from '../model/target-schema';
import { parsePayload } from '../receiving/parse-payload';
import { routeEvent } from '../routing/routing';
import { tryTransform } from '../transform/check';
import type { TransformInput } from '../transform/sandbox';

/** A body to try as the service would take it: its type, the environment whose key verified it, and `X-Merch-Id`. */
export interface TrialBody {
  eventType: EventType;
  body: string;
  environment: string;
  merchantId?: string;
}

/** What one subscribed target would make of an accepted body. */
export type TargetTrial =
  | { target: string; outcome: 'filtered' | 'other_environment' }
  | { target: string; outcome: 'delivered'; transformed?: string }
  | { target: string; outcome: 'dropped' }
  | { target: string; outcome: 'transform_error'; error: string };

/**
 * Where the service's steps stop for a body, in their order: the schema (`invalid`, quarantined), the
 * environment's `accept` rule (`not_accepted`, quarantined), then each subscribed target's
 * environments, filter and transform.
 */
export type Trial =
  | { outcome: 'invalid'; errors: string[] }
  | { outcome: 'not_accepted'; environment: string }
  | { outcome: 'accepted'; targets: TargetTrial[] };

/** A received event made from a body, as the receiver would store it (no signature headers). */
export function deliveryFieldsOf(body: TrialBody): DeliveryFields {
  return {
    eventId: eventIdFor(body.eventType, body.environment, Buffer.from(body.body)),
    eventType: body.eventType,
    receivedAt: new Date().toISOString(),
    path: eventDefinition(body.eventType).path,
    rawBody: body.body,
    rawBodyEncoding: 'utf8',
    signatureHeaders: {},
    environment: body.environment,
    ...(body.merchantId !== undefined ? { merchantId: body.merchantId } : {}),
  };
}

/** What a transform is given for an event (the same fields the delivery worker gives it). */
export function transformInputOf(
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

/** A subscribed target's result once routing chose to deliver to it: its transform's, when it has one. */
async function delivered(target: Target, body: TrialBody): Promise<TargetTrial> {
  if (target.transform === undefined) return { target: target.name, outcome: 'delivered' };
  const [result] = await tryTransform(target, [transformInputOf(deliveryFieldsOf(body))]);
  if (!result || 'error' in result)
    return { target: target.name, outcome: 'transform_error', error: result?.error ?? 'no result' };
  if (result.body === null) return { target: target.name, outcome: 'dropped' };
  return { target: target.name, outcome: 'delivered', transformed: result.body };
}

/**
 * What the service would do with a verified body, by the functions the receiver and the delivery
 * workers use, in their order. `only` names the targets to try (all subscribed ones by default).
 */
export async function tryBody(config: Config, body: TrialBody, only?: readonly Target[]): Promise<Trial> {
  const parsed = parsePayload(eventDefinition(body.eventType), body.body);
  if (!parsed.ok) return { outcome: 'invalid', errors: parsed.errors };
  const accept = environmentsOf(config).find((e) => e.name === body.environment)?.accept;
  if (accept && !acceptTest(accept)(parsed.payload, body.merchantId))
    return { outcome: 'not_accepted', environment: body.environment };
  const targets = (only ?? config.targets).filter((t) => subscribes(t, body.eventType));
  const routing = routeEvent(targets, { ...body, payload: parsed.payload });
  const results: TargetTrial[] = [];
  for (const target of targets) {
    if (routing.filtered.includes(target)) results.push({ target: target.name, outcome: 'filtered' });
    else if (!routing.deliver.includes(target)) results.push({ target: target.name, outcome: 'other_environment' });
    else results.push(await delivered(target, body));
  }
  return { outcome: 'accepted', targets: results };
}

/** A target's result in words, one line. */
export function targetTrialText(t: TargetTrial): string {
  switch (t.outcome) {
    case 'filtered':
      return 'filtered (its filter leaves this body out)';
    case 'other_environment':
      return 'not sent (the target does not take this environment)';
    case 'dropped':
      return 'dropped (the transform returned null: nothing sent)';
    case 'transform_error':
      return `transform_error: ${t.error}`;
    case 'delivered':
      return t.transformed === undefined ? 'delivered' : `delivered, transformed: ${t.transformed}`;
  }
}
