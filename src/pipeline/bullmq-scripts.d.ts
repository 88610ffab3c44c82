// BullMQ ships each Lua script as a module (dist/cjs/scripts/<name>-<keys>.js) without declarations
// beside it; the ingest script embeds the one `queue.add` runs (see ingest-script.ts).
declare module 'bullmq/dist/cjs/scripts/addStandardJob-9' {
  export const addStandardJob: { name: string; content: string; keys: number };
}
declare module 'bullmq/dist/cjs/scripts/addDelayedJob-6' {
  export const addDelayedJob: { name: string; content: string; keys: number };
}
declare module 'bullmq/dist/cjs/scripts/promote-9' {
  export const promote: { name: string; content: string; keys: number };
}
