import type { Config } from 'jest';
import base from './jest.config';

// The tests that compare wall-clock rates (test/timing), one file at a time with nothing beside them:
// `npm test` runs them after the rest of the suite.
const config: Config = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/'],
  testMatch: ['<rootDir>/test/timing/**/*.test.ts'],
  maxWorkers: 1,
};

export default config;
