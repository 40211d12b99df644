// Lets child processes in tests run the TypeScript sources directly (with
// decorator metadata, which Nest DI needs), resolving the package's own
// name to lib/ the way Jest's moduleNameMapper does.
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
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

export async function resolve(specifier, context, next) {
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

export async function load(url, context, next) {
  if (!url.endsWith('.ts')) return next(url, context);
  const filename = fileURLToPath(url);
  const source = await readFile(filename, 'utf8');
  const { code } = await swc.transform(source, { ...swcOptions, filename });
  return { format: 'module', source: code, shortCircuit: true };
}
