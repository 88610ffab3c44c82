import { MAX_JSON_DEPTH, membersUnlessDeeperThan } from '../src/receiving/json-depth';
import { duplicateKeyIn } from '../src/receiving/json-duplicates';
import { buildHarness, type Harness } from './support/harness';
import { FakePlatform } from './support/platform';

// A signed body with one key twice is judged by the rules on the last copy (JSON.parse keeps it) while
// the bytes forwarded carry both, and a target may read the first: such a body is quarantined instead.
describe('the duplicate-key scan', () => {
  it.each([
    ['{"a":1,"b":2}', undefined],
    ['{"a":1,"a":2}', 'a'],
    ['{"a":1,"a":1}', 'a'],
    ['{"data":{"amount":1,"x":{"amount":2},"amount":3}}', 'data.amount'],
    ['{"list":[{"id":1},{"id":2,"v":0,"id":3}]}', 'list[1].id'],
    ['[[{"k":1}],[{"k":1,"k":2}]]', '[1][0].k'],
    ['{"a":"\\"a\\":","b":{"a":1}}', undefined],
    ['{"a":1, "\\u0061" :2}', 'a'],
    ['{"x":[1,2,{"y":{}}],"y":{"x":1},"z":"x"}', undefined],
    ['{ "s" : "{\\"s\\":1,\\"s\\":2}" }', undefined],
  ])('%s: %s', (text, key) => {
    JSON.parse(text);
    expect(duplicateKeyIn(text, JSON.parse(text), membersUnlessDeeperThan(text, MAX_JSON_DEPTH))).toBe(key);
  });
});

describe('a signed body with a duplicate key', () => {
  const platform = new FakePlatform();
  let h: Harness;
  beforeAll(() => {
    h = buildHarness({ PLATFORM_PUBLIC_KEYS: platform.keys.publicKeyBase64 });
  });
  afterAll(() => h.close());

  it('is acknowledged and quarantined as invalid, naming the key, and queued for no target', async () => {
    const body = '{"type":"MERCH","data":{"request_id":"REQ-1","status":"FAILED","amount":1.00,"status":"SUCCESS"}}';
    await platform.send(h.app, platform.signed('payment.result', { body })).expect(200);
    const [job, ...more] = await h.pipeline.quarantine.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed']);
    expect(more).toHaveLength(0);
    expect(job!.data).toMatchObject({ reason: 'invalid', errors: ['duplicate key "data.status"'], rawBody: body });
    expect(await h.pipeline.eventQueue('payment.result').getJobCounts()).toMatchObject({ waiting: 0, completed: 0 });
    expect(h.logs.find((l) => l.level === 'error' && l.outcome === 'quarantined')).toMatchObject({
      reason: 'invalid',
      errors: ['duplicate key "data.status"'],
    });
  });
});
