import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../lib/storage/connection/embedded-postgres.js';

const quiet = { log: () => undefined, warn: () => undefined };
let root: string;

beforeAll(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'jobs-embedded-'));
  // mkdtemp makes a 0700 folder; the server runs as OS user postgres when we are root.
  await fs.chmod(root, 0o755);
});

afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

async function query<T>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Every process started on the cluster: the postmaster names it, its backends run inside it. */
function processesOn(clusterDir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cmdline.includes(clusterDir) || cwd === clusterDir) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

function exitListenerCounts(): number[] {
  return ['SIGINT', 'SIGTERM', 'SIGHUP', 'beforeExit', 'exit'].map((e) => process.listenerCount(e));
}

it('keeps data across restarts, leaves no process behind, and runs two clusters at once', async () => {
  const dirA = path.join(root, 'a');
  const clusterA = path.join(dirA, 'pgdata');
  const listenersBefore = exitListenerCounts();

  const [a, b] = await Promise.all([
    startEmbeddedPostgres({ dataDir: dirA, logger: quiet }),
    startEmbeddedPostgres({ dataDir: path.join(root, 'b'), database: 'other', logger: quiet }),
  ]);
  expect(new URL(a.url).port).not.toBe(new URL(b.url).port);
  await query(a.url, 'CREATE TABLE kept (note text); INSERT INTO kept VALUES ($$survives$$)');
  const [info] = await query<{ db: string; v: string }>(
    b.url,
    'SELECT current_database() AS db, current_setting($$server_version_num$$) AS v',
  );
  expect(info).toEqual({ db: 'other', v: expect.stringMatching(/^1[7-9]\d{4}$/) });
  // Started servers are signalled on 'exit' only; async-exit-hook's signal handlers are gone.
  expect(exitListenerCounts()).toEqual(listenersBefore.map((n, i) => (i === 4 ? n + 1 : n)));
  await expect(startEmbeddedPostgres({ dataDir: dirA, logger: quiet })).rejects.toThrow(/in use by process/);

  expect(processesOn(clusterA).length).toBeGreaterThan(1);
  await Promise.all([a.stop(), b.stop()]);
  expect(processesOn(clusterA)).toEqual([]);
  expect(exitListenerCounts()).toEqual(listenersBefore);

  const again = await startEmbeddedPostgres({ dataDir: dirA, logger: quiet });
  expect(await query(again.url, 'SELECT note FROM kept')).toEqual([{ note: 'survives' }]);
  await again.stop();
  await again.stop(); // idempotent
  expect(processesOn(clusterA)).toEqual([]);
});

it('starts over a postmaster.pid whose pid now belongs to another process', async () => {
  const dir = path.join(root, 'a');
  const sleeper = spawn('sleep', ['30']);
  try {
    // A recycled pid makes PostgreSQL itself refuse to start ("lock file already exists").
    await fs.writeFile(path.join(dir, 'pgdata', 'postmaster.pid'), `${sleeper.pid}\n`);
    const server = await startEmbeddedPostgres({ dataDir: dir, logger: quiet });
    expect(await query(server.url, 'SELECT count(*)::int AS n FROM kept')).toEqual([{ n: 1 }]);
    await server.stop();
  } finally {
    sleeper.kill('SIGKILL');
  }
});

it('stops the server a SIGKILLed process left running, then starts on the same data', async () => {
  const dir = path.join(root, 'a');
  const clusterDir = path.join(dir, 'pgdata');
  const module = new URL('../lib/storage/connection/embedded-postgres.ts', import.meta.url).href;
  const loader = new URL('./support/register-swc.mjs', import.meta.url).href;
  const script =
    `const { startEmbeddedPostgres } = await import(${JSON.stringify(module)});` +
    `const s = await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dir)}, logger: { log() {} } });` +
    `console.log(s.url); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--import', loader, '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    child.once('exit', (code) => reject(new Error(`child exited early (${code})`)));
  });
  expect(await query(url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  const orphans = processesOn(clusterDir);
  expect(orphans.length).toBeGreaterThan(0);

  const warnings: string[] = [];
  const server = await startEmbeddedPostgres({
    dataDir: dir,
    logger: { log: () => undefined, warn: (msg) => warnings.push(msg) },
  });
  expect(warnings.join('\n')).toMatch(/killed process left running/);
  expect(await query(server.url, 'SELECT note FROM kept')).toEqual([{ note: 'survives' }]);
  expect(processesOn(clusterDir).filter((pid) => orphans.includes(pid))).toEqual([]);
  await server.stop();
  expect(processesOn(clusterDir)).toEqual([]);
});

it("keeps initdb's and the server's output out of the app's, even under a locale that is not installed", async () => {
  const dir = path.join(root, 'fresh');
  const module = new URL('../lib/storage/connection/embedded-postgres.ts', import.meta.url).href;
  const loader = new URL('./support/register-swc.mjs', import.meta.url).href;
  // The default logger (console), as an app that passes none gets it.
  const script =
    `const { startEmbeddedPostgres } = await import(${JSON.stringify(module)});` +
    `const s = await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dir)} }); await s.stop();`;
  // A LANG naming a locale no machine has, as in containers that set LANG without generating it.
  const env = { ...process.env, LANG: 'xx_XX.UTF-8', LC_ALL: 'xx_XX.UTF-8' };
  const child = spawn(process.execPath, ['--import', loader, '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  // initdb ran (a fresh cluster), and said nothing where the app writes.
  expect(readFileSync(path.join(dir, 'pgdata', 'PG_VERSION'), 'utf8').trim()).toMatch(/^\d+$/);
  expect(stdout).toMatch(/^Embedded PostgreSQL listening on 127\.0\.0\.1:\d+, data in .*fresh\n$/);
});
