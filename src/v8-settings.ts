import { setFlagsFromString } from 'node:v8';

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
 */
export function applyV8Settings(): void {
  setFlagsFromString('--no-wasm-loop-unrolling');
}
