// Lets child processes in tests run the TypeScript sources directly (with
// decorator metadata, which Nest DI needs), resolving the package's own
// name to lib/ the way Jest's moduleNameMapper does. Synchronous hooks, for
// `module.registerHooks()`: the asynchronous `module.register()` is deprecated
// from Node 26 on, and its warning would reach the stderr tests read.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import swc from '@swc/core';
import { swcOptions } from './swc-options.mjs';

const root = new URL('../../', import.meta.url);
const aliases = {
  'nestjs-durable-jobs': new URL('lib/index.ts', root).href,
  'nestjs-durable-jobs/testing': new URL('lib/testing/index.ts', root).href,
  'nestjs-durable-jobs/health': new URL('lib/monitoring/jobs-health.indicator.ts', root).href,
  'nestjs-durable-jobs/metrics': new URL('lib/monitoring/jobs-metrics.ts', root).href,
  'nestjs-durable-jobs/dashboard': new URL('lib/dashboard/jobs-dashboard.module.ts', root).href,
};

export function resolve(specifier, context, next) {
  if (aliases[specifier]) return { url: aliases[specifier], shortCircuit: true };
  if (
    (specifier.startsWith('.') || specifier.startsWith('/')) &&
    specifier.endsWith('.js') &&
    context.parentURL?.startsWith('file:')
  ) {
    const asTs = new URL(specifier.replace(/\.js$/, '.ts'), context.parentURL);
    if (existsSync(fileURLToPath(asTs))) return { url: asTs.href, shortCircuit: true };
  }
  return next(specifier, context);
}

export function load(url, context, next) {
  if (!url.endsWith('.ts')) return next(url, context);
  const filename = fileURLToPath(url);
  const { code } = swc.transformSync(readFileSync(filename, 'utf8'), { ...swcOptions, filename });
  return { format: 'module', source: code, shortCircuit: true };
}
