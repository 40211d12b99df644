/**
 * The consumer matrix (`npm run test:consumers`): the packed package installed into new apps that
 * run on other Node lines, so it is not part of `npm test`. It takes the Node binaries from .tools/
 * (where .ci/run installs them) and the apps' dependencies from the npm registry.
 */
import base from '../../jest.config.js';

export default {
  ...base,
  rootDir: '../..',
  testMatch: ['<rootDir>/test/consumers/**/*.consumer.ts'],
  // Installs from the registry and builds of the package run in it.
  testTimeout: 600_000,
};
