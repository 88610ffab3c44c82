import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { ServiceError } from '../model/errors';
import type { TransformEventMeta, ThreadAnswer, ThreadCall, ThreadData, ThreadStart, TransformFault } from './protocol';

/** QuickJS's heap per transform: a transform that needs more fails (`memory`). */
export const TRANSFORM_MEMORY_BYTES = 32 * 1024 * 1024;
/** QuickJS's stack: deep recursion fails in the sandbox long before the thread's own stack would. */
const STACK_BYTES = 128 * 1024;
/**
 * The time limit of the sandbox's own work on each call, apart from the transform's: reading the event
 * in (a body at the size limit of 120,000 nested arrays has taken over a second on a loaded machine) and
 * writing the result out (which runs the result's getters and `toJSON`, the transform's code, so it is limited too).
 */
export const OWN_WORK_MS = 2000;
/**
 * QuickJS checks its deadline between instructions; a long call into one built-in (filling a huge
 * array) does not look. Past the transform's limit and this margin, the thread is ended and started
 * again. Generous: on a busy machine a thread can wait that long for a core, and the service's own
 * event loop does not wait on the thread meanwhile.
 */
export const WATCHDOG_MARGIN_MS = 1000;
/**
 * How long a thread may take to start, compile the transform and warm up, past the transform's limit:
 * longer, and start-up, reload, config check or the call waiting for it fail as a timeout. QuickJS's
 * interrupt stops a slow top level at the limit; this bounds one stuck in a built-in, and is generous
 * because a thread's start (V8 instantiating QuickJS's WebAssembly) has taken seconds on a loaded machine.
 */
export const START_MARGIN_MS = 10000;
/** The most a transform's result may take. @defaultValue 1 MiB */
export const DEFAULT_TRANSFORM_MAX_BYTES = 1024 * 1024;
/** What the thread's own V8 heap may use (QuickJS's memory is outside it, bounded above). */
const THREAD_HEAP_MB = 48;

/** The transform's source and the name its errors give it. */
export interface TransformCode {
  source: string;
  file: string;
}

/** A transform that failed: the delivery fails for good (a retry would fail again); 422 where an operator asked. */
export class TransformError extends ServiceError {
  readonly code = 'transform_error';
  readonly status = 422;
  constructor(
    readonly fault: TransformFault,
    readonly file: string,
  ) {
    super(`${fault.message}${fault.line !== undefined ? ` (${file} line ${fault.line})` : ` (${file})`}`);
  }
}

/** A transform's limits: time per call, and the size of what it returns. */
export interface TransformLimits {
  timeoutMs: number;
  maxBytes: number;
}

/** What a transform is given: the event's facts and the platform's body as received. */
export interface TransformInput {
  event: TransformEventMeta;
  raw: string;
}

export interface Sandbox {
  /** Resolves once compiled: undefined, or why it does not compile. */
  compiled(): Promise<TransformFault | undefined>;
  /** The body to send (JSON text), or null to send nothing; throws TransformError. */
  run(input: TransformInput): Promise<string | null>;
  close(): Promise<void>;
}

let wasm: Promise<WebAssembly.Module> | undefined;
/** QuickJS's WebAssembly, compiled once per process and shared by every sandbox thread. */
function quickjsWasm(): Promise<WebAssembly.Module> {
  wasm ??= WebAssembly.compile(
    readFileSync(
      path.join(path.dirname(require.resolve('@jitl/quickjs-wasmfile-release-sync')), 'emscripten-module.wasm'),
    ),
  );
  return wasm;
}

/**
 * The thread's entry file, beside this one: compiled JavaScript (dist/), or the TypeScript source when
 * this module runs from it (Jest, ts-node), which the thread then compiles with ts-node as it loads.
 */
const THREAD_FILE = path.join(__dirname, `thread-main${path.extname(__filename)}`);
const THREAD_LOADER = path.extname(__filename) === '.ts' ? ['--require', 'ts-node/register/transpile-only'] : [];
/**
 * Run from source, the thread's heap also holds ts-node and the TypeScript compiler it loads: that much
 * more, so a transform gets the same room as in a build.
 */
const LOADER_HEAP_MB = THREAD_LOADER.length ? 96 : 0;

interface Pending {
  call: ThreadCall;
  /** Set once the call timed out and went back to a fresh thread: a second timeout is final. */
  retried?: true;
  resolve(body: string | null): void;
  reject(err: Error): void;
}

/**
 * Calls handed to a thread at most, in batches: it runs them one after another, without waiting on this
 * thread to send the next.
 */
const MAX_SENT = 64;

/**
 * A transform compiled once in its own thread and QuickJS runtime, which runs its calls one after
 * another: the service's event loop never waits on it, and a call past its time limit is cut (by
 * QuickJS's interrupt, or by ending the thread, which is then started again for the next call). A
 * call that timed out runs once more on a fresh thread before its timeout is final.
 */
export function startSandbox(code: TransformCode, { timeoutMs, maxBytes }: TransformLimits): Sandbox {
  const data: Omit<ThreadData, 'wasm'> = {
    source: code.source,
    file: code.file,
    timeoutMs,
    ownWorkMs: OWN_WORK_MS,
    // Half the watchdog's margin: the thread stops a starved step itself, before it would be ended.
    marginMs: WATCHDOG_MARGIN_MS / 2,
    maxBytes,
    progress: new SharedArrayBuffer(8),
    memoryBytes: TRANSFORM_MEMORY_BYTES,
    stackBytes: STACK_BYTES,
  };
  /** Calls not yet handed to a thread. */
  const queue: Pending[] = [];
  /** Calls handed to the thread, oldest (the one it runs) first. */
  const sent: Pending[] = [];
  let worker: Worker | undefined;
  let ready: Promise<TransformFault | undefined> | undefined;
  let watchdog: NodeJS.Timeout | undefined;
  let nextId = 0;
  let closed = false;
  const failure = (fault: TransformFault) => new TransformError(fault, code.file);

  function spawn(): Promise<TransformFault | undefined> {
    return quickjsWasm().then(
      (module) => (closed ? { kind: 'crash', message: 'transform sandbox closed' } : startThread(module)),
      (err: Error) => ({ kind: 'crash', message: `QuickJS's WebAssembly did not compile: ${err.message}` }),
    );
  }

  function startThread(wasmModule: WebAssembly.Module): Promise<TransformFault | undefined> {
    const workerData: ThreadData = { ...data, wasm: wasmModule };
    // execArgv: none of the process's own (heap flags, a loader): the thread runs within its own limits.
    const thread = new Worker(THREAD_FILE, {
      workerData,
      execArgv: THREAD_LOADER,
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB + LOADER_HEAP_MB },
      stdout: true,
      stderr: true,
    });
    thread.unref();
    // Nothing of the thread's own output reaches the service's log lines.
    thread.stdout.resume();
    thread.stderr.resume();
    worker = thread;
    let started = false;
    return new Promise<TransformFault | undefined>((resolve) => {
      // A compile or warm-up stuck inside one built-in does not see QuickJS's interrupt: the thread is ended.
      const startLimitMs = timeoutMs + START_MARGIN_MS;
      const tooSlow = setTimeout(() => {
        lost(undefined, { kind: 'timeout', message: `did not compile and warm up within ${startLimitMs} ms` });
        void thread.terminate();
      }, startLimitMs);
      tooSlow.unref();
      thread.once('message', (m: ThreadStart) => {
        if (!m.ready) {
          clearTimeout(tooSlow);
          return resolve(m.error);
        }
        // Ready once a message has made the round trip: the thread's first moments (V8 finishing
        // QuickJS's WebAssembly) would otherwise count against the first event's time limit.
        thread.once('message', () => {
          clearTimeout(tooSlow);
          started = true;
          resolve(undefined);
          thread.on('message', (answers: ThreadAnswer[]) => settle(thread, answers));
        });
        thread.postMessage([
          {
            id: 0,
            ping: true,
            event: { id: '', type: '', timestamp: '', environment: null, merchantId: null },
            raw: '',
          },
        ] satisfies ThreadCall[]);
      });
      function lost(err?: Error, why?: TransformFault): void {
        clearTimeout(tooSlow);
        const fault: TransformFault = why ?? {
          kind: err && /memory/i.test(err.message) ? 'memory' : 'crash',
          message: `the sandbox thread failed: ${err?.message ?? 'exited'}`,
        };
        resolve(fault);
        if (worker !== thread) return;
        worker = undefined;
        ready = undefined;
        if (!started) {
          // It never ran: the calls waiting for it fail (a timeout once tries a fresh thread); the next call
          // starts one again.
          for (const p of queue.splice(0)) fail(p, fault);
          pump();
          return;
        }
        cut(fault);
      }
      thread.once('error', lost);
      thread.once('exit', () => lost());
    });
  }

  /** A call failed: for good, or (its first timeout) back to the front of the queue, for a fresh thread. */
  function fail(p: Pending, fault: TransformFault): void {
    if (fault.kind !== 'timeout' || p.retried) return p.reject(failure(fault));
    p.retried = true;
    queue.unshift(p);
  }

  function reject(p: Pending, fault: TransformFault): void {
    p.reject(failure(fault));
  }

  /** Ends the thread (it may be anywhere in a call); the calls it had not answered go to the next one. */
  function endThread(): void {
    clearTimeout(watchdog);
    const thread = worker;
    worker = undefined;
    ready = undefined;
    void thread?.terminate();
    queue.unshift(...sent.splice(0));
  }

  /**
   * The thread is gone while running the oldest call: that call fails; the others never ran, and go to the
   * next thread.
   */
  function cut(fault: TransformFault): void {
    clearTimeout(watchdog);
    const running = sent.shift();
    queue.unshift(...sent.splice(0));
    if (running) fail(running, fault);
    pump();
  }

  const stepDeadline = new Float64Array(data.progress);
  /**
   * The watchdog on the oldest call: QuickJS's interrupt answers at the deadline; a thread still busy
   * the margin past its current step's deadline (or past the call's limit from now) is ended.
   */
  function arm(): void {
    clearTimeout(watchdog);
    if (sent.length === 0) return;
    const armedAt = Date.now();
    const check = () => {
      const due = Math.max(stepDeadline[0]!, armedAt + timeoutMs) + WATCHDOG_MARGIN_MS;
      const left = due - Date.now();
      if (left > 0) {
        watchdog = setTimeout(check, left);
        return;
      }
      const running = sent.shift()!;
      endThread();
      fail(running, { kind: 'timeout', message: `timed out after ${timeoutMs} ms` });
      pump();
    };
    watchdog = setTimeout(check, timeoutMs + WATCHDOG_MARGIN_MS);
  }

  function settle(thread: Worker, answers: ThreadAnswer[]): void {
    if (thread !== worker) return;
    for (const answer of answers) {
      if (sent[0]?.call.id !== answer.id) continue;
      const p = sent.shift()!;
      if (!('error' in answer)) p.resolve(answer.body);
      else if (answer.error.kind !== 'timeout') p.reject(failure(answer.error));
      else {
        // A timeout is retried on a fresh thread: the one that timed out may have been starved or cold.
        endThread();
        fail(p, answer.error);
        break;
      }
    }
    arm();
    pump();
  }

  function pump(): void {
    if (closed || queue.length === 0 || sent.length >= MAX_SENT) return;
    ready ??= spawn();
    const current = ready;
    void current.then((fault) => {
      if (closed || ready !== current) return;
      // Compiled with a fault: every call fails with it. A timeout (compiling or warming up) is tried once more.
      if (fault) {
        if (fault.kind === 'timeout') endThread();
        for (const p of queue.splice(0)) (fault.kind === 'timeout' ? fail : reject)(p, fault);
        pump();
        return;
      }
      const batch = queue.splice(0, MAX_SENT - sent.length);
      if (batch.length === 0) return;
      const idle = sent.length === 0;
      sent.push(...batch);
      // The watchdog watches the oldest call: armed here when the thread was idle, else when its answer comes.
      if (idle) arm();
      worker!.postMessage(batch.map((p) => p.call));
    });
  }

  return {
    compiled() {
      ready ??= spawn();
      return ready;
    },
    run(input) {
      return new Promise<string | null>((resolve, reject) => {
        if (closed) return reject(new Error('transform sandbox closed'));
        queue.push({ call: { id: ++nextId, event: input.event, raw: input.raw }, resolve, reject });
        pump();
      });
    },
    async close() {
      closed = true;
      clearTimeout(watchdog);
      for (const p of [...sent.splice(0), ...queue.splice(0)]) p.reject(new Error('transform sandbox closed'));
      const thread = worker;
      worker = undefined;
      await thread?.terminate();
    },
  };
}
