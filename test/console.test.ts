import request from 'supertest';
import { configSchema } from '../src/config/schema';
import { createEventSearch } from '../src/operations/event-search';
import { createCsrf } from '../src/admin/console/csrf';
import { consoleWorld, OPERATOR, REQUEST_ID, VIEWER, type ConsoleWorld } from './support/console-event';
import { FakePlatform } from './support/platform';

const platform = new FakePlatform();
let w: ConsoleWorld;

beforeAll(async () => {
  w = await consoleWorld(platform);
}, 30000);
afterAll(async () => {
  await w?.close();
});

const asOperator = (r: request.Test) => r.auth(OPERATOR.username, OPERATOR.password);
const asViewer = (r: request.Test) => r.auth(VIEWER.username, VIEWER.password);

/** The hidden CSRF field of a confirmation page. */
function csrfOf(page: string): string {
  const m = /name="csrf" value="([^"]+)"/.exec(page);
  if (!m) throw new Error('no csrf field on the page');
  return m[1]!;
}

describe('the console without a script', () => {
  it('needs the admin credentials', async () => {
    await request(w.f.admin).get('/admin/console/events').expect(401);
  });

  it('GET /admin/console/events?q=<request_id> lists the event, each target with its state', async () => {
    const res = await asOperator(request(w.f.admin).get(`/admin/console/events?q=${REQUEST_ID}`)).expect(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.headers['content-security-policy']).toMatch(/default-src 'self'/);
    expect(res.text).toContain(`href="/admin/console/events/${w.eventId}"`);
    expect(res.text).toMatch(
      /<td data-label="Target">ledger<\/td>\s*<td data-label="State"><span class="badge s-delivered">delivered<\/span>/,
    );
    expect(res.text).toMatch(
      /<td data-label="Target">erp<\/td>\s*<td data-label="State"><span class="badge s-dead_letter">dead letter<\/span>/,
    );
    expect(res.text).not.toMatch(/<script>/); // no inline script: the page reads without one
  });

  it('finds the event by its id (the webhook-id) and says so when nothing matches', async () => {
    const byId = await asOperator(request(w.f.admin).get(`/admin/console/events?q=${w.eventId}`)).expect(200);
    expect(byId.text).toContain('2 deliveries by event id');
    const none = await asOperator(request(w.f.admin).get('/admin/console/events?q=PAY-NOBODY')).expect(200);
    expect(none.text).toContain('No event with request_id, event id or webhook-id PAY-NOBODY');
  });

  it('filters the list by target and state, and refuses a time that is not one', async () => {
    const dead = await asOperator(request(w.f.admin).get('/admin/console/events?target=erp&state=dead_letter')).expect(
      200,
    );
    expect(dead.text).toContain(w.eventId);
    const delivered = await asOperator(
      request(w.f.admin).get('/admin/console/events?target=erp&state=delivered'),
    ).expect(200);
    expect(delivered.text).not.toContain(w.eventId);
    expect(delivered.text).toContain('No deliveries match.');
    const future = await asOperator(request(w.f.admin).get('/admin/console/events?from=2999-01-01T00:00:00Z')).expect(
      200,
    );
    expect(future.text).not.toContain(w.eventId);
    const bad = await asOperator(request(w.f.admin).get('/admin/console/events?from=yesterday')).expect(400);
    expect(bad.text).toContain('from: not a time');
  });

  it('the event page shows the receipt, the masked payload and every attempt with its answer', async () => {
    const res = await asOperator(request(w.f.admin).get(`/admin/console/events/${w.eventId}`)).expect(200);
    expect(res.text).toContain('production');
    expect(res.text).not.toContain('Jane Roe'); // payer_name is a sensitive field
    expect(res.text).toContain('ledger period closed'); // the failing target's answer
    expect(res.text.match(/data-trigger="received"/g)).toHaveLength(2);
    expect(res.text).toMatch(/time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"/);
  });

  it('the targets page counts each target’s deliveries and dead letters and links to them', async () => {
    const res = await asOperator(request(w.f.admin).get('/admin/console/targets')).expect(200);
    // The target's name, where it sends, and its actions, then its counts, each cell labelled for narrow screens.
    const row = (name: string, delivered: number, dead: number) =>
      new RegExp(
        `<th scope="row">${name}<br /><span class="muted">http://127\\.0\\.0\\.1:\\d+/[^<]*</span>[\\s\\S]*?</th>\\s*` +
          `<td data-label="Paused">no</td>\\s*<td data-label="Delivered, last hour">${delivered}</td>\\s*` +
          `<td data-label="Dead-lettered, last hour">${dead}</td>`,
      );
    expect(res.text).toMatch(row('erp', 0, 1));
    expect(res.text).toMatch(row('ledger', 1, 0));
    expect(res.text).toContain('href="/admin/console/events?target=erp&amp;state=dead_letter"');
  });
});

describe('acting from the console', () => {
  it('a viewer sees no action, cannot open a confirmation, and is refused a change on the API too', async () => {
    const page = await asViewer(request(w.f.admin).get(`/admin/console/events/${w.eventId}`)).expect(200);
    expect(page.text).not.toContain('/admin/console/confirm/');
    expect(page.text).toContain('auditor');
    await asViewer(request(w.f.admin).get(`/admin/console/confirm/resend?event=${w.eventId}`)).expect(403);
    const api = await asViewer(request(w.f.admin).post('/admin/api/targets/erp/pause')).expect(403);
    expect(api.body.error).toBe('read_only_principal');
    expect(await w.f.pipeline.deliveryQueue('erp')!.isPaused()).toBe(false);
    await asViewer(request(w.f.admin).get('/admin/api/targets')).expect(200);
  });

  it('a POST without the token, with another principal’s token, or from another site is refused and changes nothing', async () => {
    const confirm = await asOperator(request(w.f.admin).get('/admin/console/confirm/pause?target=erp')).expect(200);
    const token = csrfOf(confirm.text);
    await asOperator(
      request(w.f.admin).post('/admin/console/actions/pause').type('form').send({ target: 'erp' }),
    ).expect(403);
    const viewersToken = createCsrf().issue('basic:auditor');
    await asOperator(
      request(w.f.admin).post('/admin/console/actions/pause').type('form').send({ target: 'erp', csrf: viewersToken }),
    ).expect(403);
    await asOperator(
      request(w.f.admin)
        .post('/admin/console/actions/pause')
        .set('origin', 'https://evil.example')
        .type('form')
        .send({ target: 'erp', csrf: token }),
    ).expect(403);
    expect(await w.f.pipeline.deliveryQueue('erp')!.isPaused()).toBe(false);
    expect(w.f.adminLogs.find((l) => l.action === 'target.pause')).toBeUndefined();
  });

  it('pause and resume go through the audited operation, after the confirmation', async () => {
    for (const action of ['pause', 'resume'] as const) {
      const confirm = await asOperator(request(w.f.admin).get(`/admin/console/confirm/${action}?target=erp`)).expect(
        200,
      );
      const done = await asOperator(
        request(w.f.admin)
          .post(`/admin/console/actions/${action}`)
          .type('form')
          .send({ target: 'erp', csrf: csrfOf(confirm.text) }),
      ).expect(303);
      expect(done.headers.location).toBe(`/admin/console/targets?done=${action}`);
      expect(await w.f.pipeline.deliveryQueue('erp')!.isPaused()).toBe(action === 'pause');
      expect(w.f.adminLogs.find((l) => l.action === `target.${action}`)).toMatchObject({
        audit: true,
        principal: 'basic:ops',
        target: 'erp',
      });
    }
  });

  it('the replay confirmation shows how many dead letters it will replay', async () => {
    const confirm = await asOperator(request(w.f.admin).get('/admin/console/confirm/replay-all?target=erp')).expect(
      200,
    );
    expect(confirm.text).toMatch(/Replay <strong data-count>1<\/strong> dead letter of target <strong>erp<\/strong>/);
    const none = await asOperator(request(w.f.admin).get('/admin/console/confirm/replay-all?target=ledger')).expect(
      200,
    );
    expect(none.text).toContain('There is no dead letter');
    expect(none.text).not.toContain('<form method="post"');
  });
});

describe('the list read model', () => {
  it('pages newest first and goes on from where the last page stopped', async () => {
    const search = createEventSearch(w.f.pipeline);
    const first = await search.search({ limit: 1 });
    expect(first.rows).toHaveLength(1);
    expect(first.next).toBeDefined();
    const second = await search.search({ limit: 1, cursor: first.next });
    expect(second.rows).toHaveLength(1);
    expect(`${second.rows[0]!.target}`).not.toBe(first.rows[0]!.target);
    const third = await search.search({ limit: 5, cursor: second.next });
    expect(third.rows).toHaveLength(0);
    expect(third.next).toBeUndefined();
  });
});

describe('principals in the configuration', () => {
  const base = { name: 'x', role: 'viewer' };
  it('take a password or a token, not both, and a known role', () => {
    const problems = (principals: unknown[]) => {
      const r = configSchema.shape.adminPrincipals.safeParse(principals);
      return r.success ? [] : r.error.issues.map((i) => i.message);
    };
    expect(problems([{ ...base, password: 'long enough password' }])).toEqual([]);
    expect(problems([{ ...base, password: 'long enough password', token: 'a-token-of-16-chars-or-more' }])[0]).toMatch(
      /one of them/,
    );
    expect(problems([{ ...base, role: 'admin', token: 'a-token-of-16-chars-or-more' }])).not.toEqual([]);
  });
});
