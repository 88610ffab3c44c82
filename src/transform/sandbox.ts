import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { TransformEventMeta, ThreadAnswer, ThreadCall, ThreadData, ThreadStart, TransformFault, WasmModule } from './protocol';
import { sandboxThread } from './thread';

/** QuickJS's heap per transform: a transform that needs more fails (`memory`). */
export const TRANSFORM_MEMORY_BYTES = 32 * 1024 * 1024;
/** QuickJS's stack: deep recursion fails in the sandbox long before the thread's own stack would. */
const STACK_BYTES = 128 * 1024;
/**
 * QuickJS checks its deadline between instructions; a long call into one built-in (filling a huge
 * array) does not look. Past the deadline and this margin, the thread is ended and started again.
 * Generous: on a busy machine a thread can wait that long for a core, and the service's own event
 * loop does not wait on the thread meanwhile.
 */
const WATCHDOG_MARGIN_MS = 1000;
/** What the thread's own V8 heap may use (QuickJS's memory is outside it, bounded above). */
const THREAD_HEAP_MB = 48;

/** The transform's source and the name its errors give it. */
export interface TransformCode {
  source: string;
  file: string;
}

/** A transform that failed: the delivery fails for good (a retry would fail again). */
export class TransformError extends Error {
  constructor(readonly fault: TransformFault, readonly file: string) {
    super(`${fault.message}${fault.line !== undefined ? ` (${file} line ${fault.line})` : ` (${file})`}`);
    this.name = 'TransformError';
  }
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

const { WebAssembly: Wasm } = globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule> } };
let wasm: Promise<WasmModule> | undefined;
/** QuickJS's WebAssembly, compiled once per process and shared by every sandbox thread. */
function quickjsWasm(): Promise<WasmModule> {
  wasm ??= Wasm.compile(readFileSync(path.join(path.dirname(require.resolve('@jitl/quickjs-wasmfile-release-sync')), 'emscripten-module.wasm')));
  return wasm;
}

let modulePaths: ThreadData['modules'] | undefined;
function modules(): ThreadData['modules'] {
  modulePaths ??= {
    quickjs: require.resolve('quickjs-emscripten-core'),
    variant: require.resolve('@jitl/quickjs-wasmfile-release-sync'),
    // lossless-json's CommonJS entry is its UMD bundle, which also runs as a plain script inside QuickJS.
    lossless: require.resolve('lossless-json'),
    losslessUmd: require.resolve('lossless-json'),
  };
  return modulePaths;
}

const THREAD_SOURCE = `(${sandboxThread.toString()})()`;

interface Pending {
  call: ThreadCall;
  resolve(body: string | null): void;
  reject(err: Error): void;
}

/**
 * A transform compiled once in its own thread and QuickJS runtime, called one event at a time: the
 * service's event loop never waits on it, and a call past its time limit is cut (by QuickJS's
 * interrupt, or by ending the thread, which is then started again for the next call).
 */
export function startSandbox(code: TransformCode, timeoutMs: number): Sandbox {
  const data: Omit<ThreadData, 'wasm'> = { modules: modules(), source: code.source, file: code.file, timeoutMs, memoryBytes: TRANSFORM_MEMORY_BYTES, stackBytes: STACK_BYTES };
  const queue: Pending[] = [];
  let worker: Worker | undefined;
  let ready: Promise<TransformFault | undefined> | undefined;
  let inFlight: (Pending & { timer: NodeJS.Timeout }) | undefined;
  let nextId = 0;
  let closed = false;

  function spawn(): Promise<TransformFault | undefined> {
    return quickjsWasm().then(
      (module) => (closed ? { kind: 'crash', message: 'transform sandbox closed' } : startThread(module)),
      (err: Error) => ({ kind: 'crash', message: `QuickJS's WebAssembly did not compile: ${err.message}` }),
    );
  }

  function startThread(wasmModule: WasmModule): Promise<TransformFault | undefined> {
    const workerData: ThreadData = { ...data, wasm: wasmModule };
    // execArgv: none of the process's own (a loader such as ts-node, heap flags): the thread runs plain JavaScript within its own limits.
    const thread = new Worker(THREAD_SOURCE, { eval: true, workerData, execArgv: [], resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB }, stdout: true, stderr: true });
    thread.unref();
    // Nothing of the thread's own output reaches the service's log lines.
    thread.stdout.resume();
    thread.stderr.resume();
    worker = thread;
    const started = new Promise<TransformFault | undefined>((resolve) => {
      thread.once('message', (m: ThreadStart) => {
        if (!m.ready) return resolve(m.error);
        // Ready once a message has made the round trip: the thread's first moments (V8 finishing
        // QuickJS's WebAssembly) would otherwise count against the first event's time limit.
        thread.once('message', () => {
          resolve(undefined);
          thread.on('message', (answer: ThreadAnswer) => settle(thread, answer));
        });
        thread.postMessage({ id: 0, ping: true, event: { id: '', type: '', timestamp: '', environment: null, merchantId: null }, raw: '' } satisfies ThreadCall);
      });
      const lost = (err?: Error) => {
        resolve({ kind: 'crash', message: `the sandbox thread failed: ${err?.message ?? 'exited'}` });
        if (worker !== thread) return;
        worker = undefined;
        ready = undefined;
        if (inFlight) fail(inFlight, { kind: err && /memory/i.test(err.message) ? 'memory' : 'crash', message: `the sandbox thread failed: ${err?.message ?? 'exited'}` });
      };
      thread.once('error', lost);
      thread.once('exit', () => lost());
    });
    return started;
  }

  function fail(p: Pending & { timer: NodeJS.Timeout }, fault: TransformFault): void {
    clearTimeout(p.timer);
    inFlight = undefined;
    p.reject(new TransformError(fault, code.file));
    pump();
  }

  function settle(thread: Worker, answer: ThreadAnswer): void {
    if (thread !== worker || !inFlight || inFlight.call.id !== answer.id) return;
    const p = inFlight;
    clearTimeout(p.timer);
    inFlight = undefined;
    if ('error' in answer) p.reject(new TransformError(answer.error, code.file));
    else p.resolve(answer.body);
    pump();
  }

  function pump(): void {
    if (inFlight || closed || queue.length === 0) return;
    ready ??= spawn();
    const thread = worker;
    void ready.then((fault) => {
      if (inFlight || closed) return;
      const p = queue.shift();
      if (!p) return;
      // Compiled with a fault (or the thread failed as it started): this call fails, the next one tries anew.
      if (fault) {
        p.reject(new TransformError(fault, code.file));
        return pump();
      }
      if (!thread || worker !== thread) {
        queue.unshift(p);
        return pump();
      }
      // The watchdog: QuickJS's interrupt answers at the deadline; a thread that does not is ended.
      const timer = setTimeout(() => {
        void thread.terminate();
        worker = undefined;
        ready = undefined;
        fail(pending, { kind: 'timeout', message: `timed out after ${timeoutMs} ms` });
      }, timeoutMs + WATCHDOG_MARGIN_MS);
      const pending = { ...p, timer };
      inFlight = pending;
      thread.postMessage(p.call);
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
      for (const p of queue.splice(0)) p.reject(new Error('transform sandbox closed'));
      if (inFlight) fail(inFlight, { kind: 'crash', message: 'transform sandbox closed' });
      const thread = worker;
      worker = undefined;
      await thread?.terminate();
    },
  };
}
