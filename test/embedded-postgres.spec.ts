import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../lib/storage/embedded/embedded-postgres.js';
import { AppProcess, killServersOn, leftOn, NOTHING_LEFT, processesOn, ROOT } from './support/app-process.js';

const quiet = { log: () => undefined, warn: () => undefined };
let root: string;

beforeAll(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'jobs-embedded-'));
  // mkdtemp makes a 0700 folder; the server runs as OS user postgres when we are root.
  await fs.chmod(root, 0o755);
});

afterAll(async () => {
  // Only a failed test leaves a server running.
  for (const dir of await fs.readdir(root)) killServersOn(path.join(root, dir, 'pgdata'));
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

/** A script run in a child process of its own, with `startEmbeddedPostgres` and `pg` in scope. */
function runScript(script: string, env: Record<string, string | undefined> = {}): AppProcess {
  const module = new URL('../lib/storage/embedded/embedded-postgres.ts', import.meta.url).href;
  const prelude =
    `const { startEmbeddedPostgres } = await import(${JSON.stringify(module)});` +
    `const { default: pg } = await import('pg');`;
  const loader = './test/support/register-swc.mjs';
  return new AppProcess(process.execPath, ['--import', loader, '--input-type=module', '-e', prelude + script], env);
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
  // One listener each while servers run, whatever their number (and none of async-exit-hook's).
  expect(exitListenerCounts()).toEqual(listenersBefore.map((n, i) => (i === 3 ? n : n + 1)));
  await expect(startEmbeddedPostgres({ dataDir: dirA, logger: quiet })).rejects.toMatchObject({
    name: 'JobsError',
    message: expect.stringMatching(/^The embedded PostgreSQL data in \S+ is in use by process \d+ /),
  });

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
  const child = runScript(
    `const s = await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dir)}, logger: { log() {} } });` +
      `console.log('url ' + s.url); setInterval(() => {}, 1000);`,
  );
  const [, url] = await child.line(/^url (\S+)$/, 30_000);
  expect(await query(url!, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
  process.kill(child.pid, 'SIGKILL');
  await child.exited;
  // Nothing can stop a server when its parent is SIGKILLed: the next start does.
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
  expect(leftOn(dir)).toEqual(NOTHING_LEFT);
});

it('process.exit() stops the server before the process ends: no server and no owner.pid are left', async () => {
  const dir = path.join(root, 'a');
  const child = runScript(
    `await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dir)}, logger: { log() {} } }); process.exit(3);`,
  );
  expect(await child.exited).toEqual({ code: 3, signal: null });
  expect(leftOn(dir)).toEqual(NOTHING_LEFT);
  expect(child.stderr).toBe('');
});

it('leaves a signal the app handles to the app; one that nothing handles stops the server and then ends the process', async () => {
  const dir = path.join(root, 'a');
  const start = `const s = await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dir)}, logger: { log() {} } });`;
  // The app's own handler still finds the server answering, and stops it when it is done.
  const handled = runScript(
    start +
      `process.on('SIGTERM', async () => {` +
      `  const c = new pg.Client({ connectionString: s.url }); await c.connect();` +
      `  const { rows } = await c.query('SELECT 1 AS one'); await c.end();` +
      `  console.log('answered ' + rows[0].one); await s.stop(); process.exit(0);` +
      `});` +
      `console.log('ready');`,
  );
  await handled.line(/^ready$/, 30_000);
  process.kill(handled.pid, 'SIGTERM');
  expect(await handled.exited).toEqual({ code: 0, signal: null });
  expect(handled.stdout).toBe('ready\nanswered 1\n');
  expect(leftOn(dir)).toEqual(NOTHING_LEFT);

  const alone = runScript(start + `console.log('ready'); setInterval(() => {}, 1000);`);
  await alone.line(/^ready$/, 30_000);
  process.kill(alone.pid, 'SIGTERM');
  expect(await alone.exited).toEqual({ code: null, signal: 'SIGTERM' });
  expect(leftOn(dir)).toEqual(NOTHING_LEFT);
});

it("keeps initdb's and the server's output out of the app's, even under a locale that is not installed", async () => {
  const dir = path.join(root, 'fresh');
  // The default logger (console), as an app that passes none gets it. A LANG naming a locale no
  // machine has, as in containers that set LANG without generating it.
  const child = runScript(
    `const s = await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dir)} }); await s.stop();`,
    {
      LANG: 'xx_XX.UTF-8',
      LC_ALL: 'xx_XX.UTF-8',
    },
  );
  expect({ exit: await child.exited, stderr: child.stderr }).toEqual({ exit: { code: 0, signal: null }, stderr: '' });
  // initdb ran (a fresh cluster), and said nothing where the app writes.
  expect(readFileSync(path.join(dir, 'pgdata', 'PG_VERSION'), 'utf8').trim()).toMatch(/^\d+$/);
  expect(child.stdout).toMatch(/^Embedded PostgreSQL listening on 127\.0\.0\.1:\d+, data in .*fresh\n$/);
});

it('a fresh initdb and start tell the logger given one fact, that the server listens, and print nothing themselves', async () => {
  const dir = path.join(root, 'told');
  const logger = `{ log: (m) => console.log('log: ' + m), warn: (m) => console.log('warn: ' + m) }`;
  const child = runScript(
    `const s = await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dir)}, logger: ${logger} });` +
      `await s.stop(); console.log('stopped');`,
  );
  expect({ exit: await child.exited, stderr: child.stderr }).toEqual({ exit: { code: 0, signal: null }, stderr: '' });
  expect(existsSync(path.join(dir, 'pgdata', 'PG_VERSION'))).toBe(true);
  expect(child.stdout).toMatch(/^log: Embedded PostgreSQL listening on 127\.0\.0\.1:\d+, data in \S+told\nstopped\n$/);
});

it('the installed embedded-postgres and its binaries are versions that the peer range in package.json admits', () => {
  const require = createRequire(import.meta.url);
  const semver = require('semver') as { satisfies(version: string, range: string): boolean };
  const manifest = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const peers = manifest(path.join(ROOT, 'package.json')).peerDependencies as Record<string, string>;
  const range = peers['embedded-postgres']!;
  // Each package exports its entry only; its package.json sits one folder above (dist/).
  const entry = require.resolve('embedded-postgres');
  const platform = `@embedded-postgres/${process.platform}-${process.arch}`;
  const versions = [entry, createRequire(entry).resolve(platform)].map(
    (file) => manifest(path.join(path.dirname(file), '..', 'package.json')).version as string,
  );
  expect(versions.map((version) => ({ version, admitted: semver.satisfies(version, range) }))).toEqual(
    versions.map((version) => ({ version, admitted: true })),
  );
});
