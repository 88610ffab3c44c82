import type { Counter } from 'prom-client';

/** The current value of one labelled series of a counter (0 when the series does not exist). */
export async function counterValue<T extends string>(counter: Counter<T>, labels: Partial<Record<T, string>>): Promise<number> {
  const { values } = await counter.get();
  const match = values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k as T] === val));
  return match?.value ?? 0;
}
