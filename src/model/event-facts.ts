/** What an operator recognises a notification by: the platform's request id, its amount and currency. */
export interface EventFacts {
  requestId?: string;
  amount?: string;
  currency?: string;
}

function textOf(value: unknown): string | undefined {
  if (typeof value === 'string' && value.length > 0 && value.length <= 200) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/**
 * The facts from a body's top level or its `data` (the platform publishes no payload shapes, so the
 * usual names are read where they are: `request_id`, `amount` or `sell_amount`, `currency` or
 * `sell_currency`); a fact the body lacks is absent.
 */
export function eventFactsOf(payload: unknown): EventFacts {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return {};
  const top = payload as Record<string, unknown>;
  const data =
    typeof top.data === 'object' && top.data !== null && !Array.isArray(top.data)
      ? (top.data as Record<string, unknown>)
      : {};
  const pick = (...names: string[]) => {
    for (const source of [data, top])
      for (const name of names) {
        const text = textOf(source[name]);
        if (text !== undefined) return text;
      }
    return undefined;
  };
  const facts: EventFacts = {};
  const requestId = pick('request_id');
  const amount = pick('amount', 'sell_amount');
  const currency = pick('currency', 'sell_currency');
  if (requestId !== undefined) facts.requestId = requestId;
  if (amount !== undefined) facts.amount = amount;
  if (currency !== undefined) facts.currency = currency;
  return facts;
}
