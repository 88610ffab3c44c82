import { UsageError } from '../errors';
import { parseArgs } from 'node:util';
import { startListener } from '../../listen/server';

/**
 * `listen --port 4000 --secret whsec_… [--forward-to URL] [--json]`: runs until SIGINT or SIGTERM.
 * `--secret` may be given twice, for a target whose secret is being rotated.
 */
export async function listenCommand(args: string[], out: (line: string) => void): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string', default: '4000' },
      host: { type: 'string', default: '127.0.0.1' },
      secret: { type: 'string', multiple: true },
      'forward-to': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const secrets = values.secret ?? [];
  if (secrets.length === 0)
    throw new UsageError("give --secret whsec_… (the target's secret in the service's configuration)");
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port: not a port: ${values.port}`);
  if (values['forward-to'] !== undefined && !/^https?:\/\//.test(values['forward-to']))
    throw new UsageError('--forward-to takes an http:// or https:// URL');

  const listener = await startListener(
    { port, host: values.host, secrets, forwardTo: values['forward-to'], json: values.json },
    out,
  );
  out(
    `listening on http://${values.host}:${listener.port} (POST on any path), verifying Standard Webhooks signatures` +
      `${values['forward-to'] ? `, forwarding to ${values['forward-to']}` : ''}; Ctrl-C to stop`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await listener.close();
  return 0;
}
