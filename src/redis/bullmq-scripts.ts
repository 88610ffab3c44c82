/**
 * BullMQ's own Lua scripts that ours embed (the ingest script's adds, the sequencer's promote), as
 * the installed BullMQ ships them: resolved, one module per script, named `<name>-<keys>`. They are
 * not part of BullMQ's public API, so package.json pins BullMQ to one exact version and
 * test/bullmq-scripts.test.ts records what each one is: an upgrade that changes or renames one fails
 * there, with what to check, instead of here at start.
 */
export const EMBEDDED_SCRIPTS = {
  addStandardJob: 'addStandardJob-9',
  addDelayedJob: 'addDelayedJob-6',
  promote: 'promote-9',
} as const;

export type EmbeddedScript = keyof typeof EMBEDDED_SCRIPTS;

export interface BullmqScript {
  name: string;
  content: string;
  keys: number;
}

export function bullmqScript(name: EmbeddedScript): BullmqScript {
  const file = EMBEDDED_SCRIPTS[name];
  let script: BullmqScript | undefined;
  try {
    script = (require(`bullmq/dist/cjs/scripts/${file}`) as Record<string, BullmqScript | undefined>)[name];
  } catch (err) {
    throw new Error(
      `BullMQ ${installedVersion()} does not ship its ${file} script, which ours embed: install the version ` +
        `package.json pins`,
      { cause: err },
    );
  }
  if (!script?.content)
    throw new Error(
      `BullMQ ${installedVersion()}'s ${file} script module has no ${name}: install the version package.json pins`,
    );
  return script;
}

function installedVersion(): string {
  try {
    return (require('bullmq/package.json') as { version: string }).version;
  } catch {
    return '(unknown version)';
  }
}
