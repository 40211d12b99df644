// How TypeScript becomes JavaScript in tests, for Jest and for the child
// processes the crash tests spawn alike: decorator metadata (Nest DI needs it)
// and ES modules (Nest 12 ships ESM only).
export const swcOptions = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
    keepClassNames: true,
  },
  module: { type: 'es6' },
  sourceMaps: 'inline',
};
