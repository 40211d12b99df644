import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Vitest 4 on Vite 8 compiles TypeScript with Oxc, which emits the decorator
// metadata Nest's injection needs when tsconfig.json says so
// (experimentalDecorators and emitDecoratorMetadata): no plugin needed.
export default defineConfig({
  test: {
    include: ['test/**/*.spec.ts'],
  },
  resolve: {
    // Only in this repository, where the package is its own source; an app leaves these out.
    alias: [
      { find: /^nestjs-durable-jobs$/, replacement: fileURLToPath(new URL('../../lib/index.ts', import.meta.url)) },
      {
        find: /^nestjs-durable-jobs\/testing$/,
        replacement: fileURLToPath(new URL('../../lib/testing/index.ts', import.meta.url)),
      },
    ],
  },
});
