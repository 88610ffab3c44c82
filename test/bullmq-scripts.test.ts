import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { bullmqScript, EMBEDDED_SCRIPTS, type EmbeddedScript } from '../src/redis/bullmq-scripts';

/**
 * What each BullMQ script ours embed was when the ingest script (src/pipeline/lua/ingest.lua) and the
 * sequencer (src/ordering/lua/order-pop.lua) were last checked against it: its number of keys and a
 * SHA-256 of its text, for the BullMQ version package.json pins.
 */
const PINNED_VERSION = '6.7.0';
const RECORDED: Record<EmbeddedScript, { keys: number; sha256: string }> = {
  addStandardJob: { keys: 9, sha256: '2eee45c9ffc54d24681b737f926016a7f7464f0d32a5f87f623bffa2fc55413c' },
  addDelayedJob: { keys: 6, sha256: 'e47c0db3c46bd84afab98fae90bba3b98cf6554e74df840801c39baccc627c4c' },
  promote: { keys: 9, sha256: '06c562bf39eaaa21ac81963c16f5dce60d92e0a3966083e1f2389d55c3279459' },
};

const ROOT = path.resolve(__dirname, '..');
const installed = (
  JSON.parse(readFileSync(path.join(ROOT, 'node_modules/bullmq/package.json'), 'utf8')) as { version: string }
).version;

describe("BullMQ's scripts that ours embed", () => {
  it('package.json pins BullMQ to the exact version the scripts were checked against, and that version is installed', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect({ pinned: pkg.dependencies.bullmq, installed }).toEqual({
      pinned: PINNED_VERSION,
      installed: PINNED_VERSION,
    });
  });

  it.each(Object.keys(EMBEDDED_SCRIPTS) as EmbeddedScript[])(
    '%s is the script the Lua files were written against',
    (name) => {
      const script = bullmqScript(name);
      const sha256 = createHash('sha256').update(script.content).digest('hex');
      const recorded = RECORDED[name];
      if (script.keys !== recorded.keys || sha256 !== recorded.sha256) {
        throw new Error(
          `BullMQ ${installed}'s ${EMBEDDED_SCRIPTS[name]} is not the one ours embed (checked against ${PINNED_VERSION}: ${recorded.keys} keys, sha256 ${recorded.sha256}; ` +
            `now ${script.keys} keys, sha256 ${sha256}). Before taking this BullMQ: read its new text, check that the KEYS and ARGV ` +
            `src/pipeline/ingest-script.ts (scriptArgs, recordAdd) and src/ordering/sequencer.ts (advancePast) pass still match it and that it ` +
            'still returns what the Lua files read, run the ingest and ordering tests, then record the new digest here and pin the version in package.json.',
        );
      }
      expect({ keys: script.keys, sha256 }).toEqual(recorded);
    },
  );
});
