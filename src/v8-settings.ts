import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/**
 * A worker's young generation ceiling: each of its two semi-spaces grows to at most this (V8's own
 * ceiling is 16 MB, `npm start`'s too). Draining a backlog, the worker then scavenges about 2.5 times
 * as often, which cost about 3 µs of GC per delivery (of about 120 µs), and its peak RSS is about
 * 16 MB lower; with 4 MB semi-spaces the old generation took what more promotion added, and the CPU
 * rose 5 to 12 %.
 */
const WORKER_SEMI_SPACE_BYTES = 8 * 1024 * 1024;

/**
 * Keeps the young generation at V8's starting size while the service's modules load: loading them
 * allocates enough long-lived objects to grow it to its ceiling before the first request, whatever
 * the process then does. Called before any other module of the service is loaded;
 * {@link applyRoleV8Settings} lets it grow again.
 */
export function holdYoungGeneration(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}

/**
 * V8 settings the service needs whatever command started it (`npm start` adds the heap's own flags;
 * a container or a supervisor may run `node dist/src/main.js` bare). Only settings V8 reads when it
 * uses them belong here: the heap's sizes are fixed before any code runs.
 *
 * undici parses every HTTP answer with llhttp, compiled to WebAssembly as one large state machine.
 * Once deliveries make it hot, V8 optimises that function, and unrolling its main loop alone takes
 * 5 to 12 MB more compiler memory for a moment, which the allocator then keeps: a worker's peak RSS
 * rises by as much. That parser is under 1 % of a delivering worker's CPU, so what unrolling could
 * win there does not show.
 *
 * The old generation grows to twice what survived the last full collection before V8 marks it again,
 * as under `npm start`: left to itself, V8 picks the factor from how fast it marks against how fast
 * the process allocates, and on a busy machine let a draining worker's old generation reach three
 * times its live objects.
 */
export function applyV8Settings(): void {
  setFlagsFromString('--no-wasm-loop-unrolling');
  setFlagsFromString('--heap-growing-percent=100');
}

/**
 * Once the role is known: lets the young generation grow again after start-up, a worker's only to
 * {@link WORKER_SEMI_SPACE_BYTES}, and a worker scavenges on its own thread. On the 2-core machine,
 * shared with Redis and the target, V8's helper threads cost a draining worker more than they saved:
 * drain CPU per delivery 123/109/110 µs with them, 108/105/102 µs without (alternating runs), and the
 * scavenges' pauses were shorter too.
 */
export function applyRoleV8Settings(worker: boolean): void {
  if (worker) setFlagsFromString('--no-parallel-scavenge');
  releaseYoungGeneration(worker ? WORKER_SEMI_SPACE_BYTES : undefined);
}

/**
 * Lets the young generation grow again, up to `semiSpaceBytes` per semi-space when given. Its
 * ceiling is fixed when the process starts, but V8 grows it step by step (doubling, in a scavenge,
 * once enough has survived since the last step), reading its growth factor each time: the growth is
 * stopped once the semi-spaces reach the size asked for.
 */
function releaseYoungGeneration(semiSpaceBytes?: number): void {
  // Both semi-spaces are committed: the new space's size is twice one of them.
  const reached = () =>
    semiSpaceBytes !== undefined &&
    getHeapSpaceStatistics().some((s) => s.space_name === 'new_space' && s.space_size >= 2 * semiSpaceBytes);
  if (reached()) return;
  setFlagsFromString('--semi-space-growth-factor=2');
  if (semiSpaceBytes === undefined) return;
  // A step takes many scavenges' survivors, and each scavenge is reported here before the next: in time.
  const scavenges = new PerformanceObserver(() => {
    if (!reached()) return;
    setFlagsFromString('--semi-space-growth-factor=1');
    scavenges.disconnect();
  });
  scavenges.observe({ entryTypes: ['gc'] });
}
