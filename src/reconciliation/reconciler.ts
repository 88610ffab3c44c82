import type { ApiEnvironment } from '../config/api-environments';
import type { ExpectationSettings } from '../config/api-schema';
import type { Logger } from '../logging/logger';
import { eventDefinition, inquiryPathOf, type EventType } from '../model/event-table';
import type { Metrics } from '../monitoring/metrics';
import type { Producer } from '../pipeline/producer';
import type { Expectation } from './expectation';
import { startInquiryFunctions, type InquiryFunctions, type InquirySubject } from './functions';
import { deliverFromInquiry } from './inquiry-event';
import { inquire, type InquiryResult } from './inquiry';
import type { Claim, ExpectationStore } from './store';

export interface ReconcilerDeps {
  store: ExpectationStore;
  settings: ExpectationSettings;
  /** The environments whose API is configured. */
  environments: readonly ApiEnvironment[];
  /** Every configured environment's name: the series the alerts watch start at zero for each. */
  environmentNames: readonly string[];
  producer: Pick<Producer, 'enqueueEvent'>;
  metrics: Metrics;
  logger: Logger;
  /** The window an answer's timestamp must be in (the notifications' own). */
  toleranceMs: number;
  headerPrefix: string;
  clock?: () => number;
}

export interface Reconciler {
  /** One pass: claims what is due and handles it (the loop runs this every pollIntervalMs). */
  tick(): Promise<void>;
  close(): Promise<void>;
}

/** Claimed per pass at most: a pass ends before the next starts. */
const CLAIM_BATCH = 50;
/** Settled expectations past retention removed per pass at most. */
const PURGE_BATCH = 100;

/**
 * Watches over expectations: when one falls due unmet, it asks the platform (one signed inquiry per
 * claimed attempt, see store.claimDue) and settles it from a believed answer: `missing_notification`
 * when the platform reports a final state (and, where configured, an event built from the answer is
 * delivered), asked again with backoff when not, `unresolved` past the horizon. A type without an
 * inquiry endpoint (or without inquiry functions configured) is overdue, counted and logged, and
 * `unresolved` at the horizon, without any request.
 */
export function startReconciler(deps: ReconcilerDeps): Reconciler {
  const { store, settings, metrics, logger } = deps;
  const clock = deps.clock ?? Date.now;
  metrics.expectationOutcomes(deps.environmentNames);
  const functions = new Map<string, InquiryFunctions>();
  let running: Promise<void> | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;

  const functionsOf = (environment: ApiEnvironment, type: EventType): InquiryFunctions | undefined => {
    const code = environment.inquiry[type];
    if (!code) return undefined;
    const key = `${environment.name} ${type}`;
    let found = functions.get(key);
    if (!found) {
      found = startInquiryFunctions(code);
      functions.set(key, found);
    }
    return found;
  };

  async function handle(claim: Claim): Promise<void> {
    const expectation = await store.get(claim.id);
    if (!expectation) return;
    const { eventType, environment: envName } = expectation;
    const line = {
      expectationId: expectation.id,
      requestId: expectation.requestId,
      eventType,
      environment: envName,
      dueBy: expectation.dueBy,
      attempt: claim.attempt,
    };
    const count = (outcome: string) => metrics.expectations.labels(eventType, envName, outcome).inc();
    const environment = deps.environments.find((e) => e.name === envName);
    const fns = environment && inquiryPathOf(eventType) ? functionsOf(environment, eventType) : undefined;
    const horizonAtMs = Date.parse(expectation.dueBy) + settings.horizonSeconds * 1000;
    const now = clock();
    if (claim.previous === 'open') {
      count(fns ? 'overdue' : 'overdue_without_inquiry');
      logger.warn('expected notification overdue', {
        ...line,
        inquiry: fns ? 'asking the platform' : whyNoInquiry(eventType, environment),
      });
    }
    if (!environment || !fns) {
      // Nothing to ask: overdue until the horizon (the alert is the net), then unresolved.
      if (now < horizonAtMs) {
        await store.settle(claim, 'overdue', horizonAtMs, {
          lastOutcome: whyNoInquiry(eventType, environment),
          updatedAt: String(now),
        });
      } else await unresolved(claim, expectation, line, count);
      return;
    }
    const subject: InquirySubject = {
      id: expectation.id,
      eventType,
      environment: envName,
      requestId: expectation.requestId,
      dueBy: expectation.dueBy,
      attempt: claim.attempt,
      merchantId: environment.merchantId ?? null,
    };
    let result: InquiryResult;
    let final: boolean | undefined;
    try {
      result = await inquire(
        {
          environment,
          functions: fns,
          claimNonce: (nonce) => store.claimNonce(nonce, 2 * deps.toleranceMs),
          toleranceMs: deps.toleranceMs,
          headerPrefix: deps.headerPrefix,
          clock,
        },
        subject,
      );
      if (result.kind === 'answered') final = await fns.settled(subject, result.body);
    } catch (err) {
      result = { kind: 'failed', detail: (err as Error).message };
    }
    const outcome = result.kind === 'answered' ? (final ? 'final' : 'not_final') : result.kind;
    metrics.inquiries.labels(eventType, envName, outcome).inc();
    if (result.kind === 'refused') {
      metrics.inquiryRefusals.labels(envName, result.reason).inc();
      logger.warn('inquiry answer not believed', {
        ...line,
        reason: result.reason,
        status: result.status,
        detail: result.detail,
      });
    } else if (result.kind === 'failed') {
      logger.warn('inquiry failed', { ...line, detail: result.detail });
    }
    const answer = result.kind === 'answered' ? answerFields(result, clock()) : {};
    if (result.kind === 'answered' && final) {
      const settledAt = clock();
      const recorded = await store.settle(claim, 'missing_notification', 0, {
        ...answer,
        lastOutcome: 'the platform reports a final state',
        settledAt: String(settledAt),
        updatedAt: String(settledAt),
      });
      if (!recorded) return;
      count('missing_notification');
      logger.error('notification missing: the platform reports a final state, and its notification never came', line);
      if (environment.deliverFromInquiry) {
        await deliverFromInquiry(deps.producer, store, logger, expectation, environment, result, settledAt);
      }
      return;
    }
    const last =
      result.kind === 'answered'
        ? 'the platform reports no final state yet'
        : result.kind === 'refused'
          ? `answer refused: ${result.reason}`
          : `failed: ${result.detail}`;
    const nextAtMs = clock() + backoffMs(settings, claim.attempt);
    if (nextAtMs > horizonAtMs) return unresolved(claim, expectation, line, count, last, answer);
    await store.settle(claim, 'overdue', nextAtMs, {
      ...answer,
      lastOutcome: last.slice(0, 300),
      updatedAt: String(clock()),
    });
  }

  async function unresolved(
    claim: Claim,
    expectation: Expectation,
    line: Record<string, unknown>,
    count: (outcome: string) => void,
    last = expectation.lastOutcome ?? 'no answer',
    answer: Record<string, string> = {},
  ): Promise<void> {
    const now = clock();
    const recorded = await store.settle(claim, 'unresolved', 0, {
      ...answer,
      lastOutcome: last.slice(0, 300),
      settledAt: String(now),
      updatedAt: String(now),
    });
    if (!recorded) return;
    count('unresolved');
    logger.error('expected notification unresolved: no notification and no final answer before the horizon', {
      ...line,
      lastOutcome: last,
    });
  }

  async function pass(): Promise<void> {
    const claims = await store.claimDue(clock(), settings.claimLeaseMs, CLAIM_BATCH);
    await Promise.all(
      claims.map((claim) =>
        handle(claim).catch((err: Error) =>
          logger.error('expectation not handled; its next attempt follows the lease', {
            expectationId: claim.id,
            error: err.message,
          }),
        ),
      ),
    );
    await store.purge(clock() - settings.retentionSeconds * 1000, PURGE_BATCH);
  }

  const tick = (): Promise<void> => {
    running ??= pass()
      .catch((err: Error) =>
        logger.repeated('error', 'expectations-pass', 'expectations: pass failed', { error: err.message }),
      )
      .finally(() => (running = undefined));
    return running;
  };
  const loop = () => {
    if (closed) return;
    void tick().finally(() => {
      if (!closed) timer = setTimeout(loop, settings.pollIntervalMs);
    });
  };
  timer = setTimeout(loop, settings.pollIntervalMs);

  return {
    tick,
    async close() {
      closed = true;
      clearTimeout(timer);
      await running;
      await Promise.all([...functions.values()].map((f) => f.close()));
    },
  };
}

function whyNoInquiry(type: EventType, environment: ApiEnvironment | undefined): string {
  if (!inquiryPathOf(type)) return `${eventDefinition(type).type} has no inquiry endpoint`;
  if (!environment) return 'no api configured for its environment';
  return `no inquiry functions configured for ${type}`;
}

/**
 * The facts of a believed answer, kept on the expectation (and so archived with its change): the body as
 * received, the signature headers that verified it, its nonce, status and path, and when it came.
 */
function answerFields(answer: Extract<InquiryResult, { kind: 'answered' }>, atMs: number): Record<string, string> {
  return {
    answerBody: answer.body,
    answerSignature: JSON.stringify(answer.signatureHeaders),
    answerNonce: answer.nonce,
    answerStatus: String(answer.status),
    answerPath: answer.path,
    answeredAt: String(atMs),
  };
}

/** Doubling from retryInitialMs, at most retryMaxMs. */
export function backoffMs(
  settings: Pick<ExpectationSettings, 'retryInitialMs' | 'retryMaxMs'>,
  attempt: number,
): number {
  return Math.min(settings.retryMaxMs, settings.retryInitialMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
}
