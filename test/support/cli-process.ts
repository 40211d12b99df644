import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { jobsConnection } from './database.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI's real entry as its own process, TypeScript loaded through
 * SWC, with DATABASE_URL pointing at the test server (or its pooler: see
 * cliDatabase) unless `env` says otherwise (a key set to undefined removes it).
 */
export function runCli(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  // An `env` that names the database names all of it: no pooler beside it.
  const database = 'DATABASE_URL' in env ? {} : cliDatabase();
  const merged: NodeJS.ProcessEnv = { ...process.env, ...database, ...env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete merged[key];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', './test/support/register-swc.mjs', 'lib/cli/main.ts', ...args], {
      cwd: ROOT,
      env: merged,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Where the CLI connects, as the apps do (jobsConnection()): through the pooler when the suite runs
 * through one, with the server's own URL as DIRECT_DATABASE_URL, where `migrate` goes.
 */
function cliDatabase(): NodeJS.ProcessEnv {
  const { connection, directConnection, pooler } = jobsConnection();
  return directConnection
    ? { DATABASE_URL: connection, DIRECT_DATABASE_URL: directConnection, JOBS_POOLER: pooler }
    : { DATABASE_URL: connection };
}

/** The CLI's --json output, parsed. */
export function json<T = Record<string, unknown>>(run: CliRun): T {
  if (run.code !== 0) throw new Error(`the CLI exited ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}
