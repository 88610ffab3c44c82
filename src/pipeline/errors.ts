/** Redis did not confirm the job in time (down, slow or refusing writes): nothing may be acknowledged. */
export class EnqueueUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EnqueueUnavailableError';
    Object.setPrototypeOf(this, new.target.prototype);
  }
}
