import type { ArchiveHistory } from '../archive/history';
import type { ExpectationSettings } from '../config/api-schema';
import { writeAudit, type Actor } from '../logging/audit';
import type { Logger } from '../logging/logger';
import type { Pipeline } from '../pipeline/pipeline';
import { earlierArrival } from './arrived-before';
import { ExpectationError } from './errors';
import { expectationInputSchema, expectationOf, type Expectation, type ExpectationState } from './expectation';
import { createExpectationStore, type Created, type ExpectationStore } from './store';

/** An expectation added, and whether it is new (an open one for the same request is returned as it is). */
export interface Expected {
  expectation: Expectation;
  created: boolean;
}

export interface Expectations {
  /** Adds one from the merchant's systems' request body; refused 400 (bad body), 429 (too many open). */
  expect(actor: Actor, body: unknown): Promise<Expected>;
  cancel(actor: Actor, id: string): Promise<Expectation>;
  get(id: string): Promise<Expectation>;
  list(opts: { state?: ExpectationState; limit: number }): Promise<Expectation[]>;
  ofRequest(requestId: string): Promise<Expectation[]>;
}

/**
 * The expectations as the admin API, the console and the CLI use them: every change audited with who
 * asked (the API and the CLI write the same lines). A new one is met at once by a notification that
 * arrived before it; one Redis no longer holds is told from the archive, where one is configured.
 */
export function createExpectations(deps: {
  pipeline: Pick<Pipeline, 'redis' | 'prefix' | 'options' | 'findEvent'>;
  settings: Pick<ExpectationSettings, 'maxOpenExpectations' | 'requestIdPaths'>;
  /** The configured environments: an expectation names one of them (default: the only one, or production). */
  environments: readonly string[];
  logger: Logger;
  /** Asked for expectations Redis no longer holds (`"source": "archive"`). */
  archive?: Pick<ArchiveHistory, 'expectation' | 'expectationsOfRequest'>;
  clock?: () => number;
  store?: ExpectationStore;
}): Expectations {
  const { pipeline, archive } = deps;
  const store =
    deps.store ??
    createExpectationStore(pipeline.redis, pipeline.prefix, {
      archive: pipeline.options.archive === true,
      dedupWindowMs: pipeline.options.dedupWindowMs,
    });
  const clock = deps.clock ?? Date.now;

  /** A new expectation that a notification arrived before: met now, as it would have been on arrival. */
  async function meetEarlier(result: Created): Promise<Created> {
    const { expectation } = result;
    if (!result.created || result.arrivedBefore.length === 0) return result;
    const eventId = await earlierArrival(pipeline, deps.settings, expectation, result.arrivedBefore);
    if (eventId === undefined) return result;
    const { environment, eventType, requestId } = expectation;
    const found = await store.arrived(environment, eventType, requestId, eventId, clock());
    if (found?.outcome !== 'met') return result;
    deps.logger.info('expected notification had arrived before its expectation', {
      expectationId: expectation.id,
      eventId,
      eventType,
      environment,
      requestId,
    });
    return { ...result, expectation: (await store.get(expectation.id)) ?? expectation };
  }

  const archived = (facts: Record<string, string> | undefined): Expectation | undefined => {
    const expectation = facts && expectationOf(facts);
    return expectation && { ...expectation, source: 'archive' };
  };

  const defaultEnvironment = deps.environments.length === 1 ? deps.environments[0]! : 'production';
  return {
    async expect(actor, body) {
      const parsed = expectationInputSchema.safeParse(body);
      if (!parsed.success) {
        const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`);
        writeAudit(deps.logger, actor, 'expectation.create', { refused: problems.join('; ') });
        throw new ExpectationError('bad_request', 400, problems.join('; '));
      }
      const input = parsed.data;
      const environment = input.environment ?? defaultEnvironment;
      if (!deps.environments.includes(environment)) {
        writeAudit(deps.logger, actor, 'expectation.create', { refused: `no environment ${environment}` });
        throw new ExpectationError(
          'bad_request',
          400,
          `environment: no environment named ${environment} (configured: ${deps.environments.join(', ')})`,
        );
      }
      const now = clock();
      const dueByMs = input.dueBy !== undefined ? Date.parse(input.dueBy) : now + (input.dueInSeconds ?? 0) * 1000;
      try {
        const result = await meetEarlier(
          await store.create(
            {
              eventType: input.eventType,
              environment,
              requestId: input.requestId,
              dueByMs,
              createdBy: actor.principal,
            },
            deps.settings.maxOpenExpectations,
            now,
          ),
        );
        writeAudit(deps.logger, actor, 'expectation.create', {
          items: [result.expectation.id],
          eventType: input.eventType,
          environment,
          requestId: input.requestId,
          dueBy: result.expectation.dueBy,
          created: result.created,
        });
        return { expectation: result.expectation, created: result.created };
      } catch (err) {
        writeAudit(deps.logger, actor, 'expectation.create', {
          requestId: input.requestId,
          refused: (err as Error).message,
        });
        throw err;
      }
    },
    async cancel(actor, id) {
      try {
        const expectation = await store.cancel(id, actor.principal, clock());
        writeAudit(deps.logger, actor, 'expectation.cancel', { items: [id], requestId: expectation.requestId });
        return expectation;
      } catch (err) {
        writeAudit(deps.logger, actor, 'expectation.cancel', { items: [id], refused: (err as Error).message });
        throw err;
      }
    },
    async get(id) {
      const found = (await store.get(id)) ?? (archive && archived(await archive.expectation(id)));
      if (!found)
        throw new ExpectationError(
          'not_found',
          404,
          `no expectation ${id} (unknown, or settled and past retention${archive ? ' and not archived' : ''})`,
        );
      return found;
    },
    list: (opts) => store.list(opts),
    async ofRequest(requestId) {
      // Redis's and, where configured, the archive's, together: Redis's copy wins while it has one.
      const [live, kept] = await Promise.all([
        store.ofRequest(requestId),
        archive ? archive.expectationsOfRequest(requestId) : [],
      ]);
      const known = new Set(live.map((e) => e.id));
      const older = kept.map(archived).filter((e): e is Expectation => e !== undefined && !known.has(e.id));
      return [...live, ...older].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    },
  };
}
