import { readFileSync } from 'node:fs';
import { compileErrors, validate } from '@readme/openapi-parser';
import request from 'supertest';
import { EVENT_TABLE } from '../src/model/event-table';
import { RET_CODES } from '../src/http/envelope';
import { buildOpenApiDocument, COMMITTED_DOCUMENT, serialiseDocument } from '../src/openapi/document';
import { ADMIN_TEST_TOKEN, buildForwarding, type ForwardingHarness } from './support/forwarding-harness';
import { FakePlatform } from './support/platform';

type Doc = {
  paths: Record<
    string,
    { post: { parameters: { $ref: string }[]; responses: Record<string, { $ref: string }>; requestBody: unknown } }
  >;
  webhooks: Record<
    string,
    {
      post: {
        parameters: { $ref: string }[];
        requestBody: { content: Record<string, { schema: { properties: Record<string, unknown> } }> };
      };
    }
  >;
  components: {
    parameters: Record<string, { name: string }>;
    responses: Record<string, { content: Record<string, { schema: unknown }> }>;
  };
};

// validate() dereferences the document it is given in place, so each check gets its own copy.
const generate = () => buildOpenApiDocument() as unknown as Doc;

describe('the OpenAPI description', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await validate(JSON.parse(JSON.stringify(generate())) as Parameters<typeof validate>[0]);
    if (!result.valid) throw new Error(compileErrors(result));
    expect(result.valid).toBe(true);

    // The validator is not a rubber stamp: a parameter without its `in` is refused.
    const broken = JSON.parse(JSON.stringify(generate())) as Doc & {
      components: { parameters: Record<string, Record<string, unknown>> };
    };
    delete broken.components.parameters.sign!.in;
    expect((await validate(broken as unknown as Parameters<typeof validate>[0])).valid).toBe(false);
  });

  it('the committed docs/openapi.json is current (regenerate it with npm run openapi)', () => {
    expect(readFileSync(COMMITTED_DOCUMENT, 'utf8')).toBe(serialiseDocument(generate()));
  });

  it("paths are the seven notify operations, with both schemes' signature headers and every answer in the envelope", () => {
    const doc = generate();
    expect(Object.keys(doc.paths).sort()).toEqual(EVENT_TABLE.map((e) => e.path).sort());
    const headers = Object.values(doc.components.parameters).map((p) => p.name);
    expect(headers).toEqual(
      expect.arrayContaining(['x-svc-timestamp', 'x-svc-nonce', 'x-svc-sign', 'signature', 'version', 'X-Merch-Id']),
    );
    for (const { post } of Object.values(doc.paths)) {
      // Every result code's HTTP status (its first three digits) is an answer, besides 200.
      const statuses = new Set(['200', ...Object.values(RET_CODES).map((code) => code.slice(0, 3))]);
      expect(Object.keys(post.responses).sort()).toEqual([...statuses].sort());
      expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(['200', '401', '405', '413', '503']));
      expect(post.parameters.map((p) => p.$ref)).toContain('#/components/parameters/sign');
    }
    for (const response of Object.values(doc.components.responses)) {
      expect(JSON.stringify(response.content['application/json']!.schema)).toContain('#/components/schemas/Envelope');
    }
    const remittance = doc.paths['/api/v2/remittance/notify']!.post.requestBody;
    expect(JSON.stringify(remittance)).toContain('"const":"INCOMING_REMITTANCE"');
  });

  it('webhooks are the seven forwarded event types, with the Standard Webhooks headers', () => {
    const doc = generate();
    expect(Object.keys(doc.webhooks)).toEqual(EVENT_TABLE.map((e) => e.type));
    const forwarded = doc.webhooks['payment.result']!.post;
    expect(forwarded.parameters.map((p) => doc.components.parameters[p.$ref.split('/').pop()!]!.name)).toEqual([
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
      'user-agent',
      'x-merch-id',
      'x-webhook-environment',
      'traceparent',
      'tracestate',
      'x-webhook-corrected',
      'x-webhook-source',
    ]);
    expect(forwarded.requestBody.content['application/json']!.schema.properties).toMatchObject({
      type: { const: 'payment.result' },
      data: { type: 'object' },
    });
  });

  describe('on the admin port', () => {
    let f: ForwardingHarness;
    beforeAll(() => {
      f = buildForwarding(new FakePlatform(), [], { CALLBACK_BASE_PATH: '/hooks/platform' });
    });
    afterAll(() => f.close());

    it('is served at /admin/openapi.json to an authenticated caller, for the running configuration', async () => {
      await request(f.admin).get('/admin/openapi.json').expect(401);
      const res = await request(f.admin)
        .get('/admin/openapi.json')
        .set('authorization', `Bearer ${ADMIN_TEST_TOKEN}`)
        .expect(200);
      expect(res.body.openapi).toBe('3.1.0');
      expect(Object.keys(res.body.paths)).toContain('/hooks/platform/api/v2/merch/pay/notify');
    });
  });
});
