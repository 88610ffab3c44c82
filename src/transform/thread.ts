/**
 * The sandbox thread: one worker thread per transform, holding one QuickJS runtime (WebAssembly) in
 * which the transform was compiled once. `sandboxThread` runs there from its own source text (see
 * sandbox.ts), so it uses nothing from this module's scope: it requires what it needs by the paths
 * in its workerData. The imports here are types only, which vanish from the compiled code.
 */
import type * as NodeCrypto from 'node:crypto';
import type * as NodeFs from 'node:fs';
import type * as WorkerThreads from 'node:worker_threads';
import type * as LosslessJson from 'lossless-json';
import type * as QuickJS from 'quickjs-emscripten-core';
import type {
  QuickJSContext as Context,
  QuickJSHandle as Handle,
  QuickJSRuntime as Runtime,
  QuickJSWASMModule,
} from 'quickjs-emscripten-core';
import type { TransformFault, ThreadAnswer, ThreadCall, ThreadData, ThreadStart } from './protocol';

/** Decides when a call has run past its time limit; see createRunClock. */
export interface RunClock {
  /** A call starts now. */
  start(): void;
  /** No call is running (compiling and calling both start the clock). */
  stop(): void;
  /** QuickJS's interrupt handler: true stops the call. */
  expired(): boolean;
}

/**
 * The time limit counts time the transform ran, not time its thread waited for a core: on a machine
 * short of CPU a transform that needs 1 ms may wait 50, and a permanent `transform_error` for that
 * would dead-letter good events. Reading the thread's CPU time costs microseconds, so the clock reads
 * only the wall clock until the call has lasted the limit; from `window` before it, it also notes the
 * thread's CPU time, and at the limit it stops the call only if the thread ran for at least half of
 * that window. A call that waited instead gets another window, and so on; the sandbox's watchdog still
 * ends a thread that has not answered 1 s after the limit, however it spent the time. `cpuMs` is
 * undefined where the system does not tell a thread's CPU time: the limit is then wall-clock time.
 *
 * Runs inside the sandbox thread from its source text (see sandbox.ts): it uses nothing but its arguments.
 */
export function createRunClock(limitMs: number, now: () => number, cpuMs: (() => number) | undefined): RunClock {
  // The CPU time is counted in clock ticks of 10 ms: a window shorter than two ticks tells nothing.
  const windowMs = Math.max(limitMs / 2, 20);
  let deadline = Number.POSITIVE_INFINITY;
  let watchFrom = Number.POSITIVE_INFINITY;
  let watchedAt = 0;
  let cpuAt: number | undefined;
  return {
    start() {
      const t = now();
      deadline = t + limitMs;
      watchFrom = deadline - windowMs;
      cpuAt = undefined;
    },
    stop() {
      deadline = Number.POSITIVE_INFINITY;
      watchFrom = Number.POSITIVE_INFINITY;
    },
    expired() {
      const t = now();
      if (t < watchFrom) return false;
      if (cpuMs === undefined) return t > deadline;
      if (cpuAt === undefined) {
        cpuAt = cpuMs();
        watchedAt = t;
        return false;
      }
      if (t <= deadline) return false;
      const ran = cpuMs() - cpuAt;
      if (ran * 2 >= t - watchedAt) return true;
      // It waited for a core more than it ran: another window.
      deadline = t + windowMs;
      watchFrom = t;
      cpuAt = undefined;
      return false;
    },
  };
}

export function sandboxThread(makeClock: typeof createRunClock): void {
  const { parentPort, workerData, receiveMessageOnPort } = require('node:worker_threads') as typeof WorkerThreads;
  const { readFileSync, openSync, readSync } = require('node:fs') as typeof NodeFs;
  const { randomBytes } = require('node:crypto') as typeof NodeCrypto;
  const data = workerData as ThreadData;
  const port = parentPort!;
  const quickjs = require(data.modules.quickjs) as typeof QuickJS;
  const base = (require(data.modules.variant) as { default: QuickJS.QuickJSSyncVariant }).default;
  const variant = quickjs.newVariant(base, { wasmModule: data.wasm as never });
  const lossless = require(data.modules.lossless) as typeof LosslessJson;
  const losslessSource = readFileSync(data.modules.losslessUmd, 'utf8');

  // Numbers travel in as strings marked with NUL and `n` (a string that itself starts with NUL is
  // marked with `s`), and out as strings carrying a token no event can know, replaced on the way out
  // by the number's text: so QuickJS's own JSON parser and serialiser do the work, and no digit is lost.
  const token = randomBytes(12).toString('hex');
  const unmark = new RegExp(`([:,\\[{]|^)"\\\\u0000${token}:([-+.eE0-9]+)"`, 'g');
  const prelude = `(function () {
    const { LosslessNumber, isLosslessNumber } = globalThis.LosslessJSON;
    delete globalThis.LosslessJSON;
    globalThis.LosslessNumber = LosslessNumber;
    globalThis.isLosslessNumber = isLosslessNumber;
    const out = '\\u0000${token}:';
    Object.defineProperty(LosslessNumber.prototype, 'toJSON', { value: function () { return out + this.value; } });
    const revive = (k, v) => {
      if (typeof v !== 'string' || v.charCodeAt(0) !== 0) return v;
      return v.charCodeAt(1) === 110 ? new LosslessNumber(v.slice(2)) : v.slice(2);
    };
    function strict(k, v) {
      const where = k === '' ? 'the result' : JSON.stringify(String(k));
      switch (typeof v) {
        case 'undefined':
          if (k === '' || Array.isArray(this)) throw new TypeError('not JSON: ' + where + ' is undefined');
          return v;
        case 'function': case 'symbol': case 'bigint':
          throw new TypeError('not JSON: ' + where + ' is a ' + typeof v);
        case 'number':
          if (!Number.isFinite(v)) throw new TypeError('not JSON: ' + where + ' is ' + v);
      }
      return v;
    }
    return function run(transform, text) {
      const result = transform(JSON.parse(text, revive));
      if (result === null) return null;
      if (result === undefined) {
        throw new TypeError('not JSON: transform returned nothing (return null to send nothing)');
      }
      return JSON.stringify(result, strict);
    };
  })()`;

  const mark = (v: unknown): unknown => {
    if (lossless.isLosslessNumber(v)) return `\u0000n${v.value}`;
    if (typeof v === 'string') return v.charCodeAt(0) === 0 ? `\u0000s${v}` : v;
    if (Array.isArray(v)) return v.map(mark);
    if (v !== null && typeof v === 'object') {
      const o: Record<string, unknown> = {};
      for (const k of Object.keys(v)) o[k] = mark((v as Record<string, unknown>)[k]);
      return o;
    }
    return v;
  };

  const MAX_MESSAGE = 300;
  const clock = makeClock(data.timeoutMs, Date.now, threadCpuMs());

  /**
   * This thread's CPU time in ms (Linux: user and system clock ticks of /proc/thread-self/stat), or undefined
   * elsewhere.
   */
  function threadCpuMs(): (() => number) | undefined {
    try {
      const fd = openSync('/proc/thread-self/stat', 'r');
      const buf = Buffer.alloc(1024);
      const read = () => {
        const text = buf.toString('latin1', 0, readSync(fd, buf, 0, buf.length, 0));
        // The fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
        const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
        return (Number(fields[11]) + Number(fields[12])) * 10;
      };
      return Number.isFinite(read()) ? read : undefined;
    } catch {
      return undefined;
    }
  }
  const escaped = data.file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const frame = new RegExp(`${escaped}:(\\d+)`);

  function faultOf(ctx: Context, handle: Handle, compiling: boolean): TransformFault {
    const e = ctx.dump(handle) as unknown;
    handle.dispose();
    if (typeof e !== 'object' || e === null)
      return {
        kind: 'runtime',
        message: `threw ${JSON.stringify(e) ?? String(e)}`
          .replace(/[\u0000-\u001f\u007f]+/g, ' ')
          .slice(0, MAX_MESSAGE),
      };
    const { name, message, stack, lineNumber } = e as {
      name?: string;
      message?: string;
      stack?: string;
      lineNumber?: number;
    };
    // Kept in the dead letter, the job's log and the error log line: one printable line, bounded.
    const text = `${name ?? 'Error'}: ${message ?? ''}`.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, MAX_MESSAGE);
    const line =
      compiling && name === 'SyntaxError' && typeof lineNumber === 'number'
        ? lineNumber
        : Number(frame.exec(stack ?? '')?.[1]) || undefined;
    const kind =
      message === 'interrupted'
        ? 'timeout'
        : message === 'out of memory'
          ? 'memory'
          : compiling
            ? 'compile'
            : 'runtime';
    // An interrupted call's frame names where its function starts, not where it was: no line.
    if (kind === 'timeout') return { kind, message: `timed out after ${data.timeoutMs} ms` };
    return { kind, message: kind === 'memory' ? `${text} (limit ${data.memoryBytes >> 20} MiB)` : text, line };
  }

  interface Compiled {
    runtime: Runtime;
    ctx: Context;
    run: Handle;
    transform: Handle;
  }

  function compile(module: QuickJSWASMModule): Compiled | TransformFault {
    const runtime = module.newRuntime();
    runtime.setMemoryLimit(data.memoryBytes);
    runtime.setMaxStackSize(data.stackBytes);
    runtime.setInterruptHandler(() => clock.expired());
    const ctx = runtime.newContext();
    const fail = (fault: TransformFault) => {
      ctx.dispose();
      runtime.dispose();
      return fault;
    };
    for (const [code, file] of [
      [losslessSource, '<lossless-json>'],
      [prelude, '<prelude>'],
    ] as const) {
      const r = ctx.evalCode(code, file);
      if (r.error) return fail(faultOf(ctx, r.error, true));
      if (file === '<prelude>') {
        clock.start();
        const user = ctx.evalCode(data.source, data.file);
        clock.stop();
        if (user.error) {
          r.value.dispose();
          return fail(faultOf(ctx, user.error, true));
        }
        user.value.dispose();
        const transform = ctx.getProp(ctx.global, 'transform');
        if (ctx.typeof(transform) !== 'function') {
          transform.dispose();
          r.value.dispose();
          return fail({ kind: 'compile', message: 'defines no function transform(event)' });
        }
        return { runtime, ctx, run: r.value, transform };
      }
      r.value.dispose();
    }
    return fail({ kind: 'compile', message: 'unreachable' });
  }

  /**
   * Runs the prelude's path once over a sample with an identity function instead of the transform, so
   * that V8 has compiled QuickJS's hot WebAssembly functions before the first event's time limit starts.
   */
  function warmUp(compiled: Compiled): void {
    const { ctx } = compiled;
    const identity = ctx.unwrapResult(ctx.evalCode('(event) => event', '<warm-up>'));
    const sample = JSON.stringify({
      id: 'evt_warm_up',
      type: 'payment.result',
      timestamp: new Date(0).toISOString(),
      data: mark(lossless.parse('{"data":{"amount":980.00,"list":[1,2.5,"x"],"ok":true}}')),
    });
    for (let i = 0; i < 20; i++) {
      const arg = ctx.newString(sample);
      const r = ctx.callFunction(compiled.run, ctx.undefined, identity, arg);
      arg.dispose();
      if (r.error) r.error.dispose();
      else r.value.dispose();
    }
    identity.dispose();
  }

  void quickjs.newQuickJSWASMModuleFromVariant(variant).then((module) => {
    let compiled = compile(module);
    if (!('kind' in compiled)) warmUp(compiled);
    const start: ThreadStart = 'kind' in compiled ? { ready: false, error: compiled } : { ready: true };
    port.postMessage(start);
    /** One call's answer. */
    function answer(call: ThreadCall): ThreadAnswer {
      if (call.ping) return { id: call.id, body: null };
      if ('kind' in compiled) compiled = compile(module);
      if ('kind' in compiled) return { id: call.id, error: compiled };
      const { ctx } = compiled;
      let text: string;
      try {
        text = JSON.stringify({ ...call.event, data: mark(lossless.parse(call.raw)) });
      } catch (err) {
        return {
          id: call.id,
          error: { kind: 'input', message: `the platform's body is not JSON: ${(err as Error).message}` },
        };
      }
      const arg = ctx.newString(text);
      clock.start();
      const r = ctx.callFunction(compiled.run, ctx.undefined, compiled.transform, arg);
      clock.stop();
      arg.dispose();
      if (r.error) {
        const fault = faultOf(ctx, r.error, false);
        // A runtime interrupted or out of memory may be left half-way: the next call compiles anew.
        if (fault.kind === 'timeout' || fault.kind === 'memory') {
          compiled.transform.dispose();
          compiled.run.dispose();
          ctx.dispose();
          compiled.runtime.dispose();
          compiled = compile(module);
        }
        return { id: call.id, error: fault };
      }
      const out = ctx.typeof(r.value) === 'string' ? ctx.getString(r.value) : null;
      r.value.dispose();
      if (out === null) return { id: call.id, body: null };
      const body = out.replace(unmark, '$1$2');
      if (body.includes(token))
        return {
          id: call.id,
          error: { kind: 'result', message: 'not JSON: a LosslessNumber holds text that is not a number' },
        };
      return { id: call.id, body };
    }

    // Calls come in batches; every batch already waiting is taken at once, and the answers go back
    // together, at least every FLUSH_MS, so the service hears of each call soon after it ran.
    const FLUSH_MS = 5;
    port.on('message', (first: ThreadCall[]) => {
      const answers: ThreadAnswer[] = [];
      let flushAt = performance.now() + FLUSH_MS;
      for (
        let calls: ThreadCall[] | undefined = first;
        calls;
        calls = receiveMessageOnPort(port)?.message as ThreadCall[] | undefined
      ) {
        for (const call of calls) {
          answers.push(answer(call));
          if (performance.now() >= flushAt) {
            port.postMessage(answers.splice(0));
            flushAt = performance.now() + FLUSH_MS;
          }
        }
      }
      if (answers.length > 0) port.postMessage(answers);
    });
  });
}
