import { deliveryStateOf } from '../src/operations/delivery-state';

// The state the console and its search show for a delivery, from its BullMQ state and its job.
describe("a delivery's state in an operator's words", () => {
  const job = (over: object = {}) => ({ attemptsMade: 1, data: {}, ...over });
  it('tells a delivery its transform dropped from one that was sent', () => {
    expect(deliveryStateOf('completed', job({ returnvalue: { status: 200, latencyMs: 3 } }), false)).toBe('delivered');
    expect(
      deliveryStateOf('completed', job({ returnvalue: { latencyMs: 2, confirmed: 'publisher confirm' } }), false),
    ).toBe('delivered');
    expect(deliveryStateOf('completed', job({ returnvalue: { dropped: 'transform', latencyMs: 1 } }), false)).toBe(
      'dropped',
    );
  });
  it('tells a retry from a delivery waiting for its turn, and a paused target', () => {
    expect(deliveryStateOf('delayed', job(), false)).toBe('retrying');
    expect(deliveryStateOf('delayed', job({ attemptsMade: 0, data: { orderKey: 'k' } }), false)).toBe('waiting_turn');
    expect(deliveryStateOf('waiting', job({ attemptsMade: 0 }), true)).toBe('paused');
    expect(deliveryStateOf('failed', job(), false)).toBe('dead_letter');
  });
});
