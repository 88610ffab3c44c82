import { ServiceError } from '../model/errors';

export class ConfigError extends ServiceError {
  readonly code = 'invalid_config';
  readonly status = 400;
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
  override answer() {
    return { ...super.answer(), problems: this.problems };
  }
}
