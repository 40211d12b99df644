/**
 * Jest 30 on a Nest 12 app: Nest ships ES modules only, so Jest runs in ESM mode
 * (`node --experimental-vm-modules node_modules/jest/bin/jest.js`, or
 * NODE_OPTIONS=--experimental-vm-modules) and SWC compiles TypeScript with the
 * decorator metadata Nest's injection reads. The app's package.json has
 * "type": "module".
 */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true },
          target: 'es2022',
          keepClassNames: true,
        },
        module: { type: 'es6' },
      },
    ],
  },
  moduleNameMapper: {
    // Sources import './x.js' (NodeNext); Jest finds './x.ts'.
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // Only in this repository, where the package is its own source; an app leaves these two out.
    '^nestjs-durable-jobs$': '<rootDir>/../../lib/index.ts',
    '^nestjs-durable-jobs/testing$': '<rootDir>/../../lib/testing/index.ts',
  },
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
};
