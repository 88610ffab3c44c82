import { ServiceError } from '../model/errors';

/**
 * Bytes the process holds for request bodies not yet verified, across all requests. Without it, a
 * thousand senders each holding a body one byte short of the limit hold a thousand bodies in memory;
 * with it, memory for unverified bodies stays within the budget and a request that would pass it is
 * refused (503, Retry-After) before its body is read.
 */
export class BodyBudget {
  private held = 0;
  constructor(readonly limitBytes: number) {}

  /** Takes `bytes` if they fit; false (nothing taken) if they do not. */
  take(bytes: number): boolean {
    if (this.held + bytes > this.limitBytes) return false;
    this.held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.held -= bytes;
  }

  get heldBytes(): number {
    return this.held;
  }
}

/** What one request holds of the budget; released once, when the request is done with its body. */
export class BudgetHold {
  private bytes = 0;
  constructor(private readonly budget: BodyBudget) {}

  get limitBytes(): number {
    return this.budget.limitBytes;
  }

  take(bytes: number): boolean {
    if (!this.budget.take(bytes)) return false;
    this.bytes += bytes;
    return true;
  }

  release(): void {
    this.budget.give(this.bytes);
    this.bytes = 0;
  }
}

export class BudgetExhaustedError extends ServiceError {
  readonly code = 'body_budget_in_use';
  readonly status = 503;
  constructor(readonly budgetBytes: number) {
    super(`unverified body budget of ${budgetBytes} bytes in use`);
  }
}
