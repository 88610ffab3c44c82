import { ServiceError } from '../model/errors';

/**
 * Why an expectation was refused or not found, with the status it is answered with: `too_many_expectations`
 * (429, past maxOpenExpectations), `not_found` (404), `not_open` (409: only an open or overdue one can be
 * cancelled), `bad_request` (400: a body or an environment that is not one to keep).
 */
export class ExpectationError extends ServiceError {
  constructor(
    readonly code: 'too_many_expectations' | 'not_found' | 'not_open' | 'bad_request',
    readonly status: 429 | 404 | 409 | 400,
    message: string,
  ) {
    super(message);
  }
}
