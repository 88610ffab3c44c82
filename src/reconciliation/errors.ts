import { ServiceError } from '../model/errors';

/** As many expectations are open as `maxOpenExpectations` allows. */
export class TooManyExpectationsError extends ServiceError {
  readonly code = 'too_many_expectations';
  readonly status = 429;
}

export class ExpectationNotFoundError extends ServiceError {
  readonly code = 'not_found';
  readonly status = 404;
}

/** Only an open or overdue expectation can be cancelled. */
export class ExpectationSettledError extends ServiceError {
  readonly code = 'not_open';
  readonly status = 409;
}

/** An expectation names an environment that is not configured, or is otherwise not one to keep. */
export class ExpectationInputError extends ServiceError {
  readonly code = 'bad_request';
  readonly status = 400;
}
