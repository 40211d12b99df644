/** ESM Jest: Nest 12 ships ESM only, so tests run as ES modules through SWC. */
import { swcOptions as swc } from './test/support/swc-options.mjs';

export default {
  rootDir: '.',
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', swc] },
  moduleNameMapper: {
    '^nestjs-durable-jobs$': '<rootDir>/lib/index.ts',
    '^nestjs-durable-jobs/testing$': '<rootDir>/lib/testing/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  maxWorkers: 2,
  testTimeout: 60000,
};
