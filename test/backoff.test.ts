import { backoffDelay, parseRetryAfter } from '../src/forwarding/backoff';
import { TransientDeliveryError } from '../src/forwarding/delivery-errors';

const backoff = { initialMs: 1000, maxMs: 3600000 };

describe('backoffDelay', () => {
  it('doubles per attempt, with jitter between half and all of the step', () => {
    expect(backoffDelay(1, backoff, undefined, () => 0)).toBe(500);
    expect(backoffDelay(1, backoff, undefined, () => 1)).toBe(1000);
    expect(backoffDelay(4, backoff, undefined, () => 1)).toBe(8000);
  });

  it('never exceeds maxMs', () => {
    expect(backoffDelay(40, backoff, undefined, () => 1)).toBe(3600000);
  });

  it('waits at least as long as Retry-After asks', () => {
    const err = new TransientDeliveryError('HTTP 429', 429, 120000);
    expect(backoffDelay(1, backoff, err, () => 1)).toBe(120000);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('30')).toBe(30000);
    const now = Date.parse('2026-11-21T10:00:00Z');
    expect(parseRetryAfter('Sat, 21 Nov 2026 10:01:00 GMT', now)).toBe(60000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});
