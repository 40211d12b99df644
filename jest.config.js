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
    '^nestjs-durable-jobs/health$': '<rootDir>/lib/monitoring/jobs-health.indicator.ts',
    '^nestjs-durable-jobs/metrics$': '<rootDir>/lib/monitoring/jobs-metrics.ts',
    '^nestjs-durable-jobs/dashboard$': '<rootDir>/lib/dashboard/jobs-dashboard.module.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  // An A/B bench run keeps another commit's checkout there (bench/run.sh), and .ci/run keeps the
  // Node binaries it installs in .tools/: more package.json files that Jest's module map would
  // otherwise refuse to choose between.
  modulePathIgnorePatterns: ['<rootDir>/bench/', '<rootDir>/.tools/'],
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  // One file at a time: several files run three app instances or worker
  // children (up to ~50 connections each, measured), and two of them at once
  // reached PostgreSQL's default max_connections of 100.
  maxWorkers: 1,
  testTimeout: 60000,
};
