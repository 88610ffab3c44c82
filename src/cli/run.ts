import { parseArgs } from 'node:util';
import { createLogger } from '../logging/logger';
import { cliActor } from './actor';
import { configCheckCommand } from './commands/config-check';
import type { OperatorContext } from './operator-context';
import { deadLetterCommand } from './commands/dead-letters';
import { expectCommand } from './commands/expect';
import { eventCommand, quarantineCommand, queuesCommand, targetCommand } from './commands/operations';
import { keygen } from './commands/keygen';
import { archiveCommand } from './commands/archive';
import { transformTestCommand } from './commands/transform';
import { listenCommand } from './commands/listen';
import { parseEventTypes, sendNotification } from './commands/send';
import { askOutcome } from './commands/send-report';
import { cliFailure, errorCode, UsageError } from './errors';
import { operatorConfig, type OperatorEnv } from './operator-config';
import { stripControl } from '../logging/printable';

export const USAGE = `usage: webhook-receiver <command> [options]

test notifications:
  keygen [--dir DIR]                 create a test platform key pair (default DIR: ./.keys)
  send <event-type|all> [options]    sign a sample notification as the platform would and send it
      --url URL                      receiver base URL (default http://127.0.0.1:8080)
      --key FILE                     platform private key, PKCS#8 PEM (default ./.keys/platform-private.pem)
      --scheme current|legacy        signature scheme (default current)
      --body FILE|-                  send this body instead of a sample
      --prefix P                     signature header prefix (default x-svc)
      --base-path /P                 CALLBACK_BASE_PATH of the receiver (default none)
      --app-id ID                    send <prefix>-appid
      --merchant-id ID               merchant id signed by the legacy scheme
      --sub-merchant ID              send X-Merch-Id
      --environment NAME             the receiver's environment of the signing key, for the event id printed
                                     (default production)
      --times N                      send the identical request N times (default 1)
      --set PATH=VALUE               set a body field before signing, e.g. data.merchant_no=M100023 (repeatable)
      --admin URL                    after a 200, ask this admin port (with ADMIN_TOKEN) what became of the
                                     notification: routed (each target's state) or quarantined with the reason

configuration:
  config check [--bodies DIR] [--from-quarantine]
                                     validate the configuration as the service would, print it with
                                     secrets masked, and warn about risky settings (asks Redis too);
                                     tries the samples (and the bodies in DIR, each file named for its
                                     event type, and the quarantined ones) against each environment's
                                     accept rule and each target's filter and transform
  transform test --target T (--event <event id> | --file body.json --type <event type>)
      [--environment E] [--merchant-id M]  (with --file: the environment and X-Merch-Id it arrived with)
                                     the service's steps in its order (schema, the environment's accept
                                     rule, T's environments and filter, its transform) and where they
                                     stop, or the request T would be sent (signature masked)

the merchant's side:
  listen --secret whsec_… [options]  receive forwarded events locally, verify their signature, print each one
      --port N                       listen port (default 4000; 0 picks a free one), POST on any path
      --secret S                     the target's secret; give it twice during a rotation
      --forward-to URL               pass each verified event on to your local handler and print its answer
      --json                         print the raw event instead of a readable line

operations (read the service's configuration: CONFIG_FILE, REDIS_URL, QUEUE_PREFIX, ...; each one
prints the Redis, prefix and file it uses, and refuses to run when none of them is set, unless
given --defaults):
  dlq list [--target T] [--event-type E] [--from TIME] [--to TIME] [--limit N] [--json]
  dlq replay <target>/<job id> ...   replay the named dead letters
  dlq replay --all [filters]         replay every dead letter matching the filters
  dlq discard <target>/<job id> ...  remove the named dead letters for good (never delivered)
  queues                             every queue: waiting, active, delayed, failed, completed, oldest waiting
  event <event id>                   where an event is, each target's delivery and its attempts
  event --request-id <id>            the same, by the platform's request_id
  event resend <event id> [--target T]  deliver it again (same webhook-id), to T or every subscribed target
  quarantine list                    verified notifications that are not valid JSON or fail their schema
  quarantine replay <id> [--body F]  queue it again, as it is or with a corrected body from file F
  target list | pause <name> | resume <name>
  target blocked <name>              an ordered target's keys held back by a dead letter (onDeadLetter: block)
  target release <name> <key>        let the key's later deliveries go on; its dead letter stays
  expect <event-type> <request_id> (--due-in SECONDS | --due-by TIME) [--environment E]
                                     expect that notification: asked about at the platform when overdue
  expect list [--state S] [--request-id R] [--json]
  expect cancel <expectation id>     no inquiry about it from now on

the evidence archive (ARCHIVE_URL):
  archive verify [--since DATE] [--environment NAME]
                                     re-verify every row's platform signature and the hash chains;
                                     exits 1 naming each row changed, deleted or inserted
  archive export <event id | request_id> --out DIR
                                     the notification's signed bytes, signature, key, body and facts,
                                     checked with: openssl dgst -sha256 -verify public-key.pem ...
`;

export interface CliIo extends OperatorEnv {
  out: (line: string) => void;
  /** Where audit lines go, in the service's log format. @defaultValue process.stderr (stdout keeps the tables) */
  log?: NodeJS.WritableStream;
}

/** Runs one CLI command; returns the exit code. */
export async function runCli(argv: string[], given: CliIo): Promise<number> {
  // Everything printed may hold text from outside (a target's answer, a sender's fields): no control
  // character reaches the operator's terminal.
  const io: CliIo = {
    ...given,
    out: (line) => given.out(stripControl(line)),
    ...(given.err ? { err: (line: string) => given.err!(stripControl(line)) } : {}),
  };
  try {
    return await dispatch(argv, io);
  } catch (err) {
    // Refused before anything was read: answered here; anything else goes to the caller (cli/main.ts formats it).
    if (errorCode(err) !== 'defaults_not_chosen') throw err;
    const { line, exitCode } = cliFailure(err);
    (io.err ?? io.out)(line);
    return exitCode;
  }
}

async function dispatch(argv: string[], io: CliIo): Promise<number> {
  const useDefaults = argv.includes('--defaults');
  const [command, ...rest] = argv.filter((a) => a !== '--defaults');
  switch (command) {
    case 'keygen': {
      const { values } = parseArgs({ args: rest, options: { dir: { type: 'string', default: '.keys' } } });
      keygen(values.dir, io.out);
      return 0;
    }
    case 'send':
      return sendCommand(rest, io);
    case 'listen':
      return listenCommand(rest, io.out);
    case 'dlq':
      return deadLetterCommand(operator(io, useDefaults), rest);
    case 'queues':
      return queuesCommand(operator(io, useDefaults));
    case 'event':
      return eventCommand(operator(io, useDefaults), rest);
    case 'quarantine':
      return quarantineCommand(operator(io, useDefaults), rest);
    case 'target':
      return targetCommand(operator(io, useDefaults), rest);
    case 'expect':
      return expectCommand(operator(io, useDefaults), rest);
    case 'archive':
      return archiveCommand(operator(io, useDefaults), rest);
    case 'config':
      if (rest[0] !== 'check') break;
      return configCheckCommand(io.env, io.out, rest.slice(1), io.log);
    case 'transform':
      if (rest[0] !== 'test') break;
      return transformTestCommand(io.env, rest.slice(1), io.out, () => operator(io, useDefaults));
    case 'help':
    case '--help':
      io.out(USAGE);
      return 0;
  }
  const spoken = command === 'config' || command === 'transform' ? `${command} ${rest.join(' ')}`.trim() : command;
  io.out(command === undefined ? USAGE : `unknown command "${spoken}"\n${USAGE}`);
  return 2;
}

/**
 * Operator commands need Redis and the targets, not the platform keys: read the config as a worker
 * does. Their changes are audited like the admin API's, as `cli:<os user>`.
 */
function operator(io: CliIo, useDefaults: boolean): OperatorContext {
  const config = operatorConfig(io, useDefaults);
  return { config, out: io.out, logger: createLogger(config.logLevel, io.log ?? process.stderr), actor: cliActor() };
}

async function sendCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      url: { type: 'string', default: 'http://127.0.0.1:8080' },
      key: { type: 'string', default: '.keys/platform-private.pem' },
      scheme: { type: 'string', default: 'current' },
      body: { type: 'string' },
      prefix: { type: 'string', default: 'x-svc' },
      'base-path': { type: 'string', default: '' },
      'app-id': { type: 'string' },
      'merchant-id': { type: 'string' },
      'sub-merchant': { type: 'string' },
      environment: { type: 'string', default: 'production' },
      times: { type: 'string', default: '1' },
      set: { type: 'string', multiple: true },
      admin: { type: 'string' },
    },
  });
  if (values.scheme !== 'current' && values.scheme !== 'legacy') throw new UsageError('--scheme is current or legacy');
  const times = Number(values.times);
  if (!Number.isInteger(times) || times < 1)
    throw new UsageError(`--times: not a whole number of at least 1: ${values.times}`);
  const admin = values.admin !== undefined ? { url: values.admin, token: io.env.ADMIN_TOKEN } : undefined;
  let failed = false;
  for (const type of parseEventTypes(positionals[0])) {
    const results = await sendNotification(type, {
      url: values.url,
      keyFile: values.key,
      scheme: values.scheme,
      bodyFile: values.body,
      headerPrefix: values.prefix,
      basePath: values['base-path'],
      appId: values['app-id'],
      merchantId: values['merchant-id'],
      subMerchantId: values['sub-merchant'],
      environment: values.environment,
      times,
      ...(values.set ? { sets: values.set } : {}),
    });
    for (const r of results) {
      io.out(
        `${r.type.padEnd(26)} ${r.status} ${r.body}  event ` +
          `${r.eventId}${r.requestId ? `  request_id ${r.requestId}` : ''}`,
      );
      if (r.status !== 200) failed = true;
      else if (admin) io.out(`${''.padEnd(26)} ${await askOutcome(admin, r.eventId)}`);
    }
  }
  return failed ? 1 : 0;
}
