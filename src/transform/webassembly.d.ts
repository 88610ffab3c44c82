/** The part of the WebAssembly global that sandbox.ts uses (ES2022 without DOM, the project's libraries, has none). */
declare namespace WebAssembly {
  type Module = object;
  function compile(bytes: Uint8Array): Promise<Module>;
}
