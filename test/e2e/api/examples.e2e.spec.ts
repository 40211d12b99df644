import { spawn } from 'node:child_process';
import path from 'node:path';
import { databaseUrl } from '../../support/database.js';

// The README's two testing recipes are the examples' own configs: each
// example runs here with its own runner and config, as an app would run it,
// so a recipe that stops working fails `npm test`.

const root = process.cwd();

function run(args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd,
      env: { ...process.env, DATABASE_URL: databaseUrl(), FORCE_COLOR: '0', NO_COLOR: '1', CI: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

describe('the examples, with their own test runners and configs', () => {
  it('examples/jest-esm passes under Jest 30 in ESM mode with SWC', async () => {
    const { code, output } = await run(
      [
        '--experimental-vm-modules',
        path.join(root, 'node_modules/jest/bin/jest.js'),
        '--config',
        'jest.config.js',
        '--no-cache',
      ],
      path.join(root, 'examples/jest-esm'),
    );
    expect({ code, output }).toEqual({ code: 0, output: expect.stringMatching(/Tests: +3 passed, 3 total/) });
  }, 120_000);

  it('examples/vitest passes under Vitest 4 (Vite 8, no plugin)', async () => {
    const { code, output } = await run(
      [path.join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.config.ts'],
      path.join(root, 'examples/vitest'),
    );
    expect({ code, output }).toEqual({ code: 0, output: expect.stringMatching(/Tests +2 passed \(2\)/) });
  }, 120_000);
});
