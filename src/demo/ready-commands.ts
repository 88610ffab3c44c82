/** What the demo sent and where, for the commands it prints at the end. */
export interface DemoFacts {
  redisUrl: string;
  queuePrefix: string;
  /** Relative to the project's directory, where the commands are run. */
  configFile: string;
  adminUrl: string;
  adminToken: string;
  /** The payment.result the ledger refused until it was dead-lettered. */
  deadLetter: { eventId: string; requestId?: string };
  /** The payment.result the ledger refused once, then took on the retry. */
  delivered: { eventId: string };
  target: string;
}

export interface ReadyCommand {
  /** What it shows, in a few words. */
  what: string;
  command: string;
  /** For the demo's own run of it: deliveries it starts, which the next commands should see done. */
  startsDelivery?: boolean;
}

/** The CLI commands, with the settings the CLI needs to find the demo's queues, in the order to run them. */
export function cliCommands(f: DemoFacts): ReadyCommand[] {
  const cli = `QUEUE_PREFIX=${f.queuePrefix} CONFIG_FILE=${f.configFile} REDIS_URL=${f.redisUrl} npm run cli --`;
  const dead = `${f.target}/${f.deadLetter.eventId}`;
  return [
    { what: 'the queues, each target and its dead letters', command: `${cli} queues` },
    { what: `the ${f.target}'s dead letters`, command: `${cli} dlq list --target ${f.target}` },
    ...(f.deadLetter.requestId
      ? [
          {
            what: "the dead-lettered event, by the platform's request_id",
            command: `${cli} event --request-id ${f.deadLetter.requestId}`,
          },
        ]
      : []),
    {
      what: 'replay the dead letter (same webhook-id, a new attempt series)',
      command: `${cli} dlq replay ${dead}`,
      startsDelivery: true,
    },
    {
      what: `resend the delivered event to the ${f.target}`,
      command: `${cli} event resend ${f.delivered.eventId} --target ${f.target}`,
      startsDelivery: true,
    },
    {
      what: 'the whole story of the replayed event: each attempt series, what started it, who',
      command: `${cli} event ${f.deadLetter.eventId}`,
    },
    { what: 'and of the resent one', command: `${cli} event ${f.delivered.eventId}` },
  ];
}

/**
 * The same operations through the admin API, for a service that is running: alternatives to the CLI
 * commands, each of which may also be run after them in order without failing.
 */
export function apiCommands(f: DemoFacts): ReadyCommand[] {
  const curl = `curl -s -H "Authorization: Bearer ${f.adminToken}"`;
  const json = `-H 'content-type: application/json'`;
  return [
    { what: 'the event view', command: `${curl} ${f.adminUrl}/admin/api/events/${f.deadLetter.eventId}` },
    { what: 'dead letters', command: `${curl} "${f.adminUrl}/admin/api/dead-letters?target=${f.target}"` },
    {
      // Every dead letter of the target, not the one the CLI's replay above has already delivered: run
      // after the CLI block, it replays what is left (none) instead of answering notFound.
      what: `replay the ${f.target}'s dead letters (one by id: {"ids":["${f.target}/<event id>"]})`,
      command:
        `${curl} ${json} -d '{"all":true,"target":"${f.target}"}' ` + `${f.adminUrl}/admin/api/dead-letters/replay`,
    },
    {
      what: 'resend',
      command:
        `${curl} ${json} -d '{"target":"${f.target}"}' ` +
        `${f.adminUrl}/admin/api/events/${f.delivered.eventId}/resend`,
    },
    { what: 'metrics', command: `${curl} ${f.adminUrl}/metrics` },
  ];
}
