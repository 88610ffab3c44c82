/** What the service and a sandbox thread say to each other (see thread.ts and sandbox.ts). */

/**
 * Why a transform gave no body: `compile` (it does not compile, or defines no `transform`), `runtime`
 * (it threw), `timeout`, `memory`, `result` (what it returned is not JSON), `input` (the body it was
 * given is not JSON), `crash` (the thread itself failed).
 */
export interface TransformFault {
  kind: 'compile' | 'runtime' | 'timeout' | 'memory' | 'result' | 'input' | 'crash';
  message: string;
  /** The line of the transform's source where it failed, when known. */
  line?: number;
}

/** The event a transform is given, apart from `data` (the platform's body, sent as text). */
export interface TransformEventMeta {
  id: string;
  type: string;
  /** When it was received (ISO 8601), as the standard envelope's `timestamp`. */
  timestamp: string;
  environment: string | null;
  merchantId: string | null;
}

export interface ThreadData {
  /** QuickJS's WebAssembly.Module, compiled once per process: every thread instantiates the same code. */
  wasm: WebAssembly.Module;
  source: string;
  /** The name errors give the source: its file, or `inline:<target>`. */
  file: string;
  timeoutMs: number;
  /** The time limit of the sandbox's own work on each call: reading the event in, writing the result out. */
  ownWorkMs: number;
  /** How far past its limit a step that waited for a core may run, wall-clock time, before it is stopped anyway. */
  marginMs: number;
  /** The most a transform's result may take, in bytes of UTF-8 JSON. */
  maxBytes: number;
  memoryBytes: number;
  /**
   * One Float64 the thread writes as each step of a call starts: until when (Date.now()) that step may
   * run. The service's watchdog ends a thread still busy a margin past it (a built-in QuickJS cannot
   * interrupt), so the transform's own step is cut within its limit and the margin, however long the
   * sandbox's own steps before it took.
   */
  progress: SharedArrayBuffer;
  stackBytes: number;
}

export type ThreadStart = { ready: true } | { ready: false; error: TransformFault };
export interface ThreadCall {
  id: number;
  /** A round trip before the first event, answered without running the transform. */
  ping?: true;
  event: TransformEventMeta;
  raw: string;
}
export type ThreadAnswer = { id: number; body: string | null } | { id: number; error: TransformFault };
