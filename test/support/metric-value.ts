import type { Counter } from 'prom-client';

/** The current value of one labelled series of a counter (0 when the series does not exist). */
export async function counterValue<T extends string>(
  counter: Counter<T>,
  labels: Partial<Record<T, string>>,
): Promise<number> {
  const { values } = await counter.get();
  const match = values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k as T] === val));
  return match?.value ?? 0;
}

/** One sample's value from Prometheus text (a /metrics answer), or undefined when the series is absent. */
export function scrapedValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-z_:]+)(?:\{(.*)\})? (.+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(match[3]);
  }
  return undefined;
}
