/** The part of the WebAssembly global that sandbox.ts uses (the project's libraries, ES2022 without DOM, declare none). */
declare namespace WebAssembly {
  type Module = object;
  function compile(bytes: Uint8Array): Promise<Module>;
}
