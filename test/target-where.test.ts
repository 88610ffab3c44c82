import { whereOf } from '../src/operations/target-overview';
import { targetSchema } from '../src/model/target-schema';

// What the console's targets page shows of where a target delivers: never its credentials.
describe('where a target delivers, as the console shows it', () => {
  it('masks the password of an HTTP URL and of every broker URL', () => {
    const http = targetSchema.parse({ name: 'ledger', url: 'https://svc:hunter2@ledger.internal/hook', events: ['*'] });
    expect(whereOf(http)).toBe('https://svc:***@ledger.internal/hook');
    const amqp = targetSchema.parse({
      name: 'bus',
      events: ['*'],
      destination: {
        type: 'amqp',
        url: 'amqps://app:s3cret@mq.internal:5671/v',
        exchange: 'platform.events',
        routingKey: '{type}',
      },
    });
    expect(whereOf(amqp)).toBe('amqp amqps://app:***@mq.internal:5671/v');
    const nats = targetSchema.parse({
      name: 'risk',
      events: ['*'],
      destination: {
        type: 'nats',
        servers: ['tls://tok3n@nats.internal:4222', 'tls://nats2.internal:4222'],
        subject: 'platform.{type}',
      },
    });
    expect(whereOf(nats)).toBe('nats tls://***@nats.internal:4222, tls://nats2.internal:4222');
  });
});
