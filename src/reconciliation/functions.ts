import type { ApiEnvironment, InquiryCode } from '../config/api-environments';
import type { EventType } from '../model/event-table';
import {
  DEFAULT_TRANSFORM_MAX_BYTES,
  startSandbox,
  TransformError,
  type Sandbox,
  type TransformCode,
  type TransformLimits,
} from '../transform/sandbox';

/** What `request(expectation)` is given. */
export interface InquirySubject {
  id: string;
  eventType: EventType;
  environment: string;
  requestId: string;
  dueBy: string;
  /** Which attempt this inquiry is (1 for the first). */
  attempt: number;
  merchantId: string | null;
}

/** One event type's inquiry functions of one environment, each compiled once in its own sandbox thread. */
export interface InquiryFunctions {
  /** The inquiry's body (JSON text). */
  request(subject: InquirySubject): Promise<string>;
  /** Whether the platform's answer reports a final state; throws when the function does not say true or false. */
  settled(subject: InquirySubject, answer: string): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * The sandbox calls `transform(event)`; the configuration defines `request(expectation)` and
 * `settled(response)`, so each is called through a `transform` appended after its source (which keeps
 * the source's own line numbers in its errors).
 */
const CALL = {
  request: '\n;function transform(event) { return request(event.data); }\n',
  settled: '\n;function transform(event) { return settled(event.data); }\n',
};

/** An inquiry function's answer is small: the transforms' output cap is ample. */
const limitsOf = (timeoutMs: number): TransformLimits => ({ timeoutMs, maxBytes: DEFAULT_TRANSFORM_MAX_BYTES });

export function startInquiryFunctions(code: InquiryCode): InquiryFunctions {
  const sandbox = (name: 'request' | 'settled'): Sandbox | undefined => {
    const source = code[name];
    return source && startSandbox({ source: source.source + CALL[name], file: source.file }, limitsOf(code.timeoutMs));
  };
  const request = sandbox('request');
  const settled = sandbox('settled')!;
  const run = async (box: Sandbox, subject: InquirySubject, raw: string) =>
    box.run({
      event: {
        id: subject.id,
        type: subject.eventType,
        timestamp: new Date().toISOString(),
        environment: subject.environment,
        merchantId: subject.merchantId,
      },
      raw,
    });
  return {
    async request(subject) {
      if (!request) return JSON.stringify({ request_id: subject.requestId });
      const body = await run(request, subject, JSON.stringify(subject));
      if (body === null) throw new Error('request(expectation) returned null: it must return the body to send');
      return body;
    },
    async settled(subject, answer) {
      const said = await run(settled, subject, answer);
      if (said !== 'true' && said !== 'false') {
        throw new Error(`settled(response) must return true or false, not ${String(said).slice(0, 40)}`);
      }
      return said === 'true';
    },
    async close() {
      await Promise.all([request?.close(), settled.close()]);
    },
  };
}

/**
 * Compiles every inquiry function of these environments (each in a sandbox started for the purpose)
 * and names those that do not compile, or never name the function they must define, as configuration
 * problems: start-up and `config check` refuse them rather than the first overdue expectation.
 */
export async function inquiryFunctionProblems(environments: readonly ApiEnvironment[]): Promise<string[]> {
  const checks = environments.flatMap((environment) =>
    Object.entries(environment.inquiry).flatMap(([type, code]) =>
      (['request', 'settled'] as const).flatMap((name) => {
        const source = code?.[name];
        if (!code || !source) return [];
        const where = `environments.${environment.name}.api.inquiry.${type}.${name}`;
        if (!new RegExp(`\\b${name}\\b`).test(source.source)) return [Promise.resolve(`${where}: defines no ${name}`)];
        return [compileProblem({ source: source.source + CALL[name], file: source.file }, code.timeoutMs, where)];
      }),
    ),
  );
  return (await Promise.all(checks)).filter((p): p is string => p !== undefined);
}

async function compileProblem(code: TransformCode, timeoutMs: number, where: string): Promise<string | undefined> {
  const sandbox = startSandbox(code, limitsOf(timeoutMs));
  try {
    const fault = await sandbox.compiled();
    return fault ? `${where}: does not compile: ${new TransformError(fault, code.file).message}` : undefined;
  } finally {
    await sandbox.close();
  }
}
