/**
 * The sandbox thread: one worker thread per transform, holding one QuickJS runtime (WebAssembly) in
 * which the transform was compiled once. `sandboxThread` runs there, started by thread-main.ts (see
 * sandbox.ts).
 */
import { randomBytes } from 'node:crypto';
import { openSync, readFileSync, readSync } from 'node:fs';
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import variantOfQuickJS from '@jitl/quickjs-wasmfile-release-sync';
import * as lossless from 'lossless-json';
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext as Context,
  type QuickJSHandle as Handle,
  type QuickJSRuntime as Runtime,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core';
import type { TransformFault, ThreadAnswer, ThreadCall, ThreadData, ThreadStart } from './protocol';

/** Decides when a call has run past its time limit; see createRunClock. */
export interface RunClock {
  /** A call starts now, with `limitMs` to run (the clock's own limit unless given). */
  start(limitMs?: number): void;
  /** No call is running (compiling and calling both start the clock). */
  stop(): void;
  /** QuickJS's interrupt handler: true stops the call. */
  expired(): boolean;
  /** Whether the running call was stopped (expired() said true since start()). */
  stopped(): boolean;
}

/**
 * The time limit counts time the transform ran, not time its thread waited for a core: on a machine
 * short of CPU a transform that needs 1 ms may wait 50, and a permanent `transform_error` for that
 * would dead-letter good events. Reading the thread's CPU time costs microseconds, so the clock reads
 * only the wall clock until the call has lasted the limit; from `window` before it, it also notes the
 * thread's CPU time, and at the limit it stops the call only if the thread ran for at least half of
 * that window. A call that waited instead gets another window, and so on, until `marginMs` past the
 * limit, however it spent the time (the sandbox's watchdog ends a thread that has not answered by
 * then and a margin more). `cpuMs` is undefined where the system does not tell a thread's CPU time:
 * the limit is then wall-clock time.
 */
export function createRunClock(
  limitMs: number,
  now: () => number,
  cpuMs: (() => number) | undefined,
  marginMs = Number.POSITIVE_INFINITY,
): RunClock {
  // The CPU time is counted in clock ticks of 10 ms: a window shorter than two ticks tells nothing.
  let windowMs = 0;
  let deadline = Number.POSITIVE_INFINITY;
  let watchFrom = Number.POSITIVE_INFINITY;
  let watchedAt = 0;
  let cpuAt: number | undefined;
  let fired = false;
  let hardDeadline = Number.POSITIVE_INFINITY;
  const expired = (): boolean => {
    const t = now();
    if (t < watchFrom) return false;
    if (t > hardDeadline) return true;
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
  };
  return {
    start(limit = limitMs) {
      const t = now();
      windowMs = Math.max(limit / 2, 20);
      deadline = t + limit;
      hardDeadline = deadline + marginMs;
      watchFrom = deadline - windowMs;
      cpuAt = undefined;
      fired = false;
    },
    stop() {
      deadline = Number.POSITIVE_INFINITY;
      hardDeadline = Number.POSITIVE_INFINITY;
      fired = false;
      watchFrom = Number.POSITIVE_INFINITY;
    },
    expired() {
      fired ||= expired();
      return fired;
    },
    stopped: () => fired,
  };
}

export function sandboxThread(): void {
  const data = workerData as ThreadData;
  const port = parentPort!;
  const variant = newVariant(variantOfQuickJS, { wasmModule: data.wasm });
  // lossless-json's CommonJS entry is its UMD bundle, which also runs as a plain script inside QuickJS.
  const losslessSource = readFileSync(require.resolve('lossless-json'), 'utf8');

  // Numbers travel in as strings marked with NUL and `n` (a string that itself starts with NUL is
  // marked with `s`), and out as strings carrying a token no event can know, replaced on the way out
  // by the number's text: so QuickJS's own JSON parser and serialiser do the work, and no digit is lost.
  const token = randomBytes(12).toString('hex');
  const JSON_NUMBER = '-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?';
  const unmark = new RegExp(`([:,\\[{]|^)"\\\\u0000${token}:(${JSON_NUMBER})"`, 'g');
  // Everything the prelude uses is captured before the transform's code runs, which may replace any
  // global (JSON.parse, String.prototype.slice, Function.prototype.call, ...). Its three steps: `enter`
  // parses the event, the transform runs, `finish` writes its result (or throws why it is not JSON);
  // `describe` turns a thrown value into plain text. Each runs under the clock: a getter, `toJSON` or
  // coercion of the transform's objects is the transform's code, and may loop.
  const prelude = `(function () {
    'use strict';
    const { LosslessNumber, isLosslessNumber } = globalThis.LosslessJSON;
    delete globalThis.LosslessJSON;
    globalThis.LosslessNumber = LosslessNumber;
    globalThis.isLosslessNumber = isLosslessNumber;
    const uncurry = Function.prototype.bind.bind(Function.prototype.call);
    const { parse, stringify } = JSON;
    const { isArray } = Array;
    const { getPrototypeOf, defineProperty } = Object;
    const [String_, TypeError_, isFinite] = [String, TypeError, Number.isFinite];
    const { prototype: StringProto } = String;
    const [charCodeAt, slice, exec] = [StringProto.charCodeAt, StringProto.slice, RegExp.prototype.exec].map(
      (f) => uncurry(f),
    );
    const brands = [[Map, 'a Map'], [Set, 'a Set'], [WeakMap, 'a WeakMap'], [WeakSet, 'a WeakSet']].map(
      ([C, name]) => [uncurry(C.prototype.has), name],
    );
    const [ObjectProto, ArrayProto] = [Object.prototype, Array.prototype];
    const NUMBER = /^${JSON_NUMBER}$/;
    const out = '\\u0000${token}:';
    // The result's size so far is counted as it is written: its strings' lengths against the room left
    // (a number's mark, replaced on the way out, is not counted), and its marks, to count the text without.
    let room = 0;
    let marks = 0;
    const markWidth = stringify(out).length;
    defineProperty(LosslessNumber.prototype, 'toJSON', { value: function () {
      const text = String_(this.value);
      if (exec(NUMBER, text) === null) {
        throw new TypeError_('not JSON: a LosslessNumber holds text that is not a number');
      }
      room += out.length;
      marks++;
      return out + text;
    } });
    // A LosslessNumber as its constructor makes one, without checking the text again (the platform's body parsed).
    const NumberProto = LosslessNumber.prototype;
    const number = (value) => ({ __proto__: NumberProto, value, isLosslessNumber: true });
    const revive = (k, v) => {
      if (typeof v !== 'string' || charCodeAt(v, 0) !== 0) return v;
      return charCodeAt(v, 1) === 110 ? number(slice(v, 2)) : slice(v, 2);
    };
    const notJson = (k, what) =>
      new TypeError_('not JSON: ' + (k === '' ? 'the result' : stringify(String_(k))) + ' ' + what);
    // Indexed loops, not for-of: the transform may have replaced the array iterator.
    const brandOf = (v) => {
      for (let i = 0; i < brands.length; i++) {
        try { brands[i][0](v, undefined); return brands[i][1]; } catch (e) { /* not this kind */ }
      }
      return undefined;
    };
    function strict(k, v) {
      switch (typeof v) {
        case 'string':
          room -= v.length;
          if (room < 0) throw new TypeError_('the result is larger than ' + ${data.maxBytes} + ' bytes');
          return v;
        case 'number':
          if (!isFinite(v)) throw notJson(k, 'is ' + v);
          return v;
        case 'boolean':
          return v;
        case 'undefined':
          if (k === '' || isArray(this)) throw notJson(k, 'is undefined');
          return v;
        case 'object': {
          // An array is written as one, whatever else it holds.
          if (v === null || isArray(v)) return v;
          if (typeof v.then === 'function') {
            throw notJson(k, 'is a Promise or another thenable (a transform is not async)');
          }
          const proto = getPrototypeOf(v);
          if (proto === ObjectProto || proto === ArrayProto || proto === null) return v;
          const brand = brandOf(v);
          if (brand !== undefined) throw notJson(k, 'is ' + brand);
          return v;
        }
        default:
          throw notJson(k, 'is a ' + typeof v);
      }
    }
    return {
      enter: (text) => parse(text, revive),
      finish(result) {
        if (result === null) return null;
        if (result === undefined) {
          throw new TypeError_('not JSON: transform returned nothing (return null to send nothing)');
        }
        room = ${data.maxBytes};
        marks = 0;
        const text = stringify(result, strict);
        if (text.length - marks * markWidth > ${data.maxBytes}) {
          throw new TypeError_('the result is larger than ' + ${data.maxBytes} + ' bytes');
        }
        return text;
      },
      transformOf() {
        const transform = globalThis.transform;
        if (typeof transform !== 'function') throw new TypeError_('defines no function transform(event)');
        return transform;
      },
      describe(e) {
        if (e === null || (typeof e !== 'object' && typeof e !== 'function')) {
          let shown;
          try { shown = stringify(e); } catch (err) { /* a BigInt */ }
          return stringify(['', 'threw ' + (shown === undefined ? String_(e) : shown)]);
        }
        const { name, message, stack, lineNumber } = e;
        return stringify([
          (name === undefined ? 'Error' : String_(name)) + ': ' + (message === undefined ? '' : String_(message)),
          typeof stack === 'string' ? stack : '',
          typeof lineNumber === 'number' ? lineNumber : null,
        ]);
      },
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
  const clock = createRunClock(data.timeoutMs, Date.now, threadCpuMs(), data.marginMs);
  /** Until when (Date.now()) the current step may run, for the service's watchdog: see ThreadData.progress. */
  const progress = new Float64Array(data.progress);

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
  const printable = (text: string) => text.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, MAX_MESSAGE);

  interface Compiled {
    runtime: Runtime;
    ctx: Context;
    steps: { enter: Handle; finish: Handle; describe: Handle };
    transform: Handle;
  }
  type Step = { value: Handle } | { fault: TransformFault };

  const timedOut = (limitMs: number): TransformFault => ({ kind: 'timeout', message: `timed out after ${limitMs} ms` });

  /**
   * Why a step failed, read by the prelude's `describe` while the step's clock still runs (the thrown
   * value's getters are the transform's code). Only what the engine itself throws is read from here.
   */
  function faultOf(ctx: Context, describe: Handle | undefined, thrown: Handle, compiling: boolean): TransformFault {
    let said: [string, string, number | null];
    if (clock.stopped()) said = ['InternalError: interrupted', '', null];
    else {
      const r = describe ? ctx.callFunction(describe, ctx.undefined, thrown) : { error: thrown.dup() };
      if (r.error) {
        // Interrupted, out of memory or out of stack while describing: an engine error, read with the clock running.
        const e = clock.stopped()
          ? undefined
          : (ctx.dump(r.error) as { name?: unknown; message?: unknown } | undefined);
        r.error.dispose();
        said = [e ? `${String(e.name)}: ${String(e.message)}` : 'InternalError: interrupted', '', null];
      } else {
        said = JSON.parse(ctx.getString(r.value)) as [string, string, number | null];
        r.value.dispose();
      }
    }
    thrown.dispose();
    const [text, stack, lineNumber] = said;
    const kind = clock.stopped()
      ? 'timeout'
      : text === 'InternalError: out of memory'
        ? 'memory'
        : compiling
          ? 'compile'
          : 'runtime';
    // An interrupted call's frame names where its function starts, not where it was: no line.
    if (kind === 'timeout') return timedOut(data.timeoutMs);
    const line =
      compiling && text.startsWith('SyntaxError') && lineNumber !== null
        ? lineNumber
        : Number(frame.exec(stack)?.[1]) || undefined;
    // Kept in the dead letter, the job's log and the error log line: one printable line, bounded.
    const message = printable(text);
    return { kind, message: kind === 'memory' ? `${message} (limit ${data.memoryBytes >> 20} MiB)` : message, line };
  }

  /** Calls `fn` under the clock with `limitMs`; the clock runs on while a failure is read. */
  function step(c: Pick<Compiled, 'ctx' | 'steps'>, limitMs: number, fn: Handle, ...args: Handle[]): Step {
    progress[0] = Date.now() + limitMs;
    clock.start(limitMs);
    try {
      const r = c.ctx.callFunction(fn, c.ctx.undefined, ...args);
      if (!r.error) return { value: r.value };
      return { fault: faultOf(c.ctx, c.steps.describe, r.error, false) };
    } finally {
      clock.stop();
    }
  }

  function dispose(c: Compiled): void {
    for (const h of [c.transform, c.steps.enter, c.steps.finish, c.steps.describe]) h.dispose();
    c.ctx.dispose();
    c.runtime.dispose();
  }

  function compile(module: QuickJSWASMModule): Compiled | TransformFault {
    const runtime = module.newRuntime();
    runtime.setMemoryLimit(data.memoryBytes);
    runtime.setMaxStackSize(data.stackBytes);
    runtime.setInterruptHandler(() => clock.expired());
    const ctx = runtime.newContext();
    const fail = (fault: TransformFault, handles: Handle[] = []) => {
      for (const h of handles) h.dispose();
      ctx.dispose();
      runtime.dispose();
      return fault;
    };
    // Our own code, before any of the transform's: nothing to interrupt, no getter of the transform's.
    const ours = ctx.evalCode(losslessSource, '<lossless-json>');
    if (ours.error) return fail(faultOf(ctx, undefined, ours.error, true));
    ours.value.dispose();
    const made = ctx.evalCode(prelude, '<prelude>');
    if (made.error) return fail(faultOf(ctx, undefined, made.error, true));
    const steps = {
      enter: ctx.getProp(made.value, 'enter'),
      finish: ctx.getProp(made.value, 'finish'),
      describe: ctx.getProp(made.value, 'describe'),
    };
    const transformOf = ctx.getProp(made.value, 'transformOf');
    made.value.dispose();
    const own = [steps.enter, steps.finish, steps.describe, transformOf];
    clock.start();
    let fault: TransformFault | undefined;
    try {
      const user = ctx.evalCode(data.source, data.file);
      if (user.error) fault = faultOf(ctx, steps.describe, user.error, true);
      else user.value.dispose();
    } finally {
      clock.stop();
    }
    if (fault) return fail(fault, own);
    const found = step({ ctx, steps }, data.timeoutMs, transformOf);
    transformOf.dispose();
    if ('fault' in found)
      return fail(
        { ...found.fault, kind: found.fault.kind === 'runtime' ? 'compile' : found.fault.kind },
        own.slice(0, 3),
      );
    return { runtime, ctx, steps, transform: found.value };
  }

  /** One call: the event in, the transform, the result out, each under the clock; the body's text, or null. */
  function runSteps(c: Compiled, text: string, transform: Handle): { body: string | null } | { fault: TransformFault } {
    const { ctx } = c;
    const arg = ctx.newString(text);
    const event = step(c, data.ownWorkMs, c.steps.enter, arg);
    arg.dispose();
    if ('fault' in event) return event;
    const result = step(c, data.timeoutMs, transform, event.value);
    event.value.dispose();
    if ('fault' in result) return result;
    const written = step(c, data.ownWorkMs, c.steps.finish, result.value);
    result.value.dispose();
    if ('fault' in written) return written;
    const out = ctx.typeof(written.value) === 'string' ? ctx.getString(written.value) : null;
    written.value.dispose();
    return { body: out };
  }

  /**
   * Runs the three steps a few times over a sample with an identity function instead of the transform,
   * so that V8 has compiled QuickJS's hot WebAssembly functions before the first event's time limit
   * starts. Under the clock too: the transform's top level may have replaced what the steps touch.
   */
  function warmUp(compiled: Compiled): TransformFault | undefined {
    const { ctx } = compiled;
    const identity = ctx.unwrapResult(ctx.evalCode('(event) => event', '<warm-up>'));
    const sample = JSON.stringify({
      id: 'evt_warm_up',
      type: 'payment.result',
      timestamp: new Date(0).toISOString(),
      data: mark(lossless.parse('{"data":{"amount":980.00,"list":[1,2.5,"x"],"ok":true}}')),
    });
    try {
      for (let i = 0; i < 20; i++) {
        const r = runSteps(compiled, sample, identity);
        if ('fault' in r && r.fault.kind === 'timeout')
          return { kind: 'timeout', message: `does not finish warming up within ${data.ownWorkMs} ms per step` };
      }
      return undefined;
    } finally {
      identity.dispose();
    }
  }

  /** Checks the body the steps wrote: the numbers' texts put back, its size, one JSON value. */
  function checked(out: string): { body: string } | { fault: TransformFault } {
    const body = out.replace(unmark, '$1$2');
    const bad = (message: string) => ({ fault: { kind: 'result', message } as TransformFault });
    if (body.includes(token)) return bad('not JSON: a LosslessNumber holds text that is not a number');
    if (Buffer.byteLength(body) > data.maxBytes) return bad(`the result is larger than ${data.maxBytes} bytes`);
    try {
      JSON.parse(body);
    } catch {
      return bad('not JSON: the text written is not one JSON value');
    }
    return { body };
  }

  void newQuickJSWASMModuleFromVariant(variant).then((module) => {
    let compiled: Compiled | TransformFault | undefined = compile(module);
    if (!('kind' in compiled)) {
      const cold = warmUp(compiled);
      if (cold) {
        dispose(compiled);
        compiled = cold;
      }
    }
    const start: ThreadStart = 'kind' in compiled ? { ready: false, error: compiled } : { ready: true };
    port.postMessage(start);
    /** One call's answer. */
    function answer(call: ThreadCall): ThreadAnswer {
      if (call.ping) return { id: call.id, body: null };
      progress[0] = Date.now() + data.ownWorkMs;
      compiled ??= compile(module);
      if ('kind' in compiled) return { id: call.id, error: compiled };
      let text: string;
      try {
        text = JSON.stringify({ ...call.event, data: mark(lossless.parse(call.raw)) });
      } catch (err) {
        return {
          id: call.id,
          error: { kind: 'input', message: `the platform's body is not JSON: ${(err as Error).message}` },
        };
      }
      const r = runSteps(compiled, text, compiled.transform);
      if ('fault' in r) {
        // A runtime interrupted or out of memory may be left half-way: the next call compiles anew.
        if (r.fault.kind === 'timeout' || r.fault.kind === 'memory') {
          dispose(compiled);
          compiled = undefined;
        }
        return { id: call.id, error: r.fault };
      }
      if (r.body === null) return { id: call.id, body: null };
      const body = checked(r.body);
      return 'fault' in body ? { id: call.id, error: body.fault } : { id: call.id, body: body.body };
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
        for (const c of calls) {
          answers.push(answer(c));
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
