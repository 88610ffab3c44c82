import type { ExpectationSettings } from '../config/api-schema';
import { writeAudit, type Actor } from '../logging/audit';
import type { Logger } from '../logging/logger';
import type { RedisClient } from '../redis/connect';
import { ExpectationError } from './errors';
import { expectationInputSchema, type Expectation, type ExpectationState } from './expectation';
import { createExpectationStore, type ExpectationStore } from './store';

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
 * asked (the API and the CLI write the same lines).
 */
export function createExpectations(deps: {
  redis: RedisClient;
  prefix: string;
  settings: Pick<ExpectationSettings, 'maxOpenExpectations'>;
  /** The configured environments: an expectation names one of them (default: the only one, or production). */
  environments: readonly string[];
  logger: Logger;
  clock?: () => number;
  store?: ExpectationStore;
}): Expectations {
  const store = deps.store ?? createExpectationStore(deps.redis, deps.prefix);
  const clock = deps.clock ?? Date.now;
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
        const result = await store.create(
          { eventType: input.eventType, environment, requestId: input.requestId, dueByMs, createdBy: actor.principal },
          deps.settings.maxOpenExpectations,
          now,
        );
        writeAudit(deps.logger, actor, 'expectation.create', {
          items: [result.expectation.id],
          eventType: input.eventType,
          environment,
          requestId: input.requestId,
          dueBy: result.expectation.dueBy,
          created: result.created,
        });
        return result;
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
      const found = await store.get(id);
      if (!found)
        throw new ExpectationError('not_found', 404, `no expectation ${id} (unknown, or settled and past retention)`);
      return found;
    },
    list: (opts) => store.list(opts),
    ofRequest: (requestId) => store.ofRequest(requestId),
  };
}
