/** Settles with the promise, or rejects with `onTimeout()` after `ms`; the timer never outlives it. */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** True when `work` settled (either way) within `ms`; the timer never outlives it. */
export function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  return withTimeout(
    work.then(
      () => true,
      () => true,
    ),
    ms,
    () => new Error('timeout'),
  ).catch(() => false);
}
