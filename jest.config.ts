import type { Config } from 'jest';

// @swc/jest strips types without checking them (fast); `npm run build` runs tsc for the type check.
const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // test/timing compares wall-clock rates, which another test file on the other core would skew:
  // `npm test` runs them afterwards on their own (`npm run test:timing`, which lifts this ignore).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/timing/'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};

export default config;
