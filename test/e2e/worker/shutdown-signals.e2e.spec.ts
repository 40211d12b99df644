/**
 * Signals as a terminal and a process manager send them, to apps on the embedded PostgreSQL run
 * as real processes: Ctrl-C signals the whole foreground process group (the test leads the app's
 * group and signals it), `kill -TERM` and `docker stop` signal npm's pid alone.
 */
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../../lib/storage/embedded/embedded-postgres.js';
import { jobInfoFromRows } from '../../../lib/storage/jobs/job-rows.js';
import { AppProcess, killServersOn, leftOn, NOTHING_LEFT, ROOT } from '../../support/app-process.js';
import { waitFor } from '../../support/wait.js';

/** The worker's default shutdownGrace, which these apps keep. */
const GRACE_MS = 10_000;
/** A line of Nest's logger that needs no human look (NO_COLOR is set for the children). */
const ROUTINE = /^\[Nest\] \d+ +- .+? +(LOG|DEBUG|VERBOSE) \[\w+\] /;

const started: AppProcess[] = [];
const dataDirs: string[] = [];

afterEach(() => {
  // Only a failed test leaves anything here.
  for (const app of started.splice(0)) app.killGroup();
  for (const dir of dataDirs) killServersOn(path.join(dir, 'pgdata'));
});

afterAll(async () => {
  for (const dir of dataDirs) await fs.rm(dir, { recursive: true, force: true });
});

async function freshDataDir(name: string): Promise<string> {
  const dir = path.join(ROOT, '.jobs-data', name);
  await fs.rm(dir, { recursive: true, force: true });
  dataDirs.push(dir);
  return dir;
}

function startApp(mode: 'sample' | 'library' | 'bare', dataDir: string, port = 0): AppProcess {
  const app = new AppProcess(
    process.execPath,
    ['--import', './test/support/register-swc.mjs', 'test/support/shutdown-app.ts'],
    { SHUTDOWN_MODE: mode, JOBS_DATA_DIR: dataDir, DATABASE_URL: undefined, PORT: String(port) },
  );
  started.push(app);
  return app;
}

/** Ctrl-C in a terminal: SIGINT to every process of the foreground group. */
async function pressCtrlC(app: AppProcess): Promise<{ code: number | null; signal: string | null; ms: number }> {
  const sent = Date.now();
  process.kill(-app.pid, 'SIGINT');
  const exit = await app.exited;
  return { ...exit, ms: Date.now() - sent };
}

/** What a person would have to read: warnings, errors, and anything outside the logger's format. */
function notable(app: AppProcess): string[] {
  return `${app.stdout}${app.stderr}`
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('running ') && !ROUTINE.test(line));
}

/** The job as JobQueue.get() tells it, read with the server started again on the same data. */
async function recorded(dataDir: string, jobId: string) {
  const server = await startEmbeddedPostgres({ dataDir, logger: { log: () => undefined } });
  const client = new pg.Client({ connectionString: server.url });
  try {
    await client.connect();
    const job = await client.query('SELECT * FROM jobs.job WHERE id = $1', [jobId]);
    const runs = await client.query('SELECT * FROM jobs.job_execution WHERE job_id = $1 ORDER BY attempt, id', [jobId]);
    const info = jobInfoFromRows(job.rows[0] as Record<string, unknown>, runs.rows as Record<string, unknown>[]);
    const executions = info.executions.map((e) => ({ attempt: e.attempt, state: e.state }));
    return { state: info.state, attempt: info.attempt, result: info.result, executions };
  } finally {
    await client.end().catch(() => undefined);
    await server.stop();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    // Closed at once: an open connection would hold the app's HTTP server open.
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.setTimeout(2_000, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** The local addresses of the sockets listening on `port`, from the kernel's own tables. */
function listeningOn(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const addresses: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const row of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const [, local = '', , state] = row.trim().split(/\s+/);
      const [address = '', rowPort] = local.split(':');
      if (state !== '0A' || rowPort !== hexPort) continue; // 0A: LISTEN
      addresses.push(readableAddress(address));
    }
  }
  return addresses;
}

function readableAddress(hex: string): string {
  // Each 32-bit word is in the host's (little-endian) byte order.
  const bytes = (hex.match(/.{8}/g) ?? []).flatMap((word) => (word.match(/../g) ?? []).reverse());
  if (bytes.length === 4) return bytes.map((b) => parseInt(b, 16)).join('.');
  if (bytes.every((b) => b === '00')) return '::';
  return bytes.join('');
}

it('Ctrl-C on the sample mid-job: the job is recorded once as succeeded, and the embedded server stops after the drain', async () => {
  const dataDir = await freshDataDir('shutdown-sample');
  const app = startApp('sample', dataDir, await freePort());
  const [, jobId] = await app.line(/^running (\S+)$/, 60_000);

  const exit = await pressCtrlC(app);

  expect(app.stdout).toMatch(/Waiting up to \d+ ms for 1 running job\(s\)/);
  expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
  expect(exit.ms).toBeLessThan(GRACE_MS);
  expect(notable(app)).toEqual([expect.stringMatching(/ WARN \[Sample\] DATABASE_URL is not set: using an embedded/)]);
  expect(leftOn(dataDir)).toEqual(NOTHING_LEFT);
  expect(await recorded(dataDir, jobId!)).toEqual({
    state: 'succeeded',
    attempt: 1,
    result: 'done',
    executions: [{ attempt: 1, state: 'succeeded' }],
  });
}, 120_000);

it('Ctrl-C on JobsModule.forRoot() without a connection: the same, and the process ends by the signal as Nest re-raises it', async () => {
  const dataDir = await freshDataDir('shutdown-library');
  const app = startApp('library', dataDir);
  const [, jobId] = await app.line(/^running (\S+)$/, 60_000);

  const exit = await pressCtrlC(app);

  expect(app.stdout).toMatch(/Waiting up to \d+ ms for 1 running job\(s\)/);
  expect({ code: exit.code, signal: exit.signal }).toEqual({ code: null, signal: 'SIGINT' });
  expect(exit.ms).toBeLessThan(GRACE_MS);
  // The server's one "listening" line goes through Nest's logger too, so it is not among these.
  expect(notable(app)).toEqual([expect.stringMatching(/ WARN \[JobsModule\] No "connection" or "dataSource" given/)]);
  expect(app.stdout).toMatch(/ LOG \[EmbeddedPostgres\] Embedded PostgreSQL listening on 127\.0\.0\.1:\d+/);
  expect(leftOn(dataDir)).toEqual(NOTHING_LEFT);
  expect(await recorded(dataDir, jobId!)).toEqual({
    state: 'succeeded',
    attempt: 1,
    result: 'done',
    executions: [{ attempt: 1, state: 'succeeded' }],
  });
}, 120_000);

it('Ctrl-C on an app without shutdown hooks ends it at once, and still leaves no server running', async () => {
  const dataDir = await freshDataDir('shutdown-bare');
  const app = startApp('bare', dataDir);
  await app.line(/^running (\S+)$/, 60_000);

  const exit = await pressCtrlC(app);

  expect({ code: exit.code, signal: exit.signal }).toEqual({ code: null, signal: 'SIGINT' });
  expect(leftOn(dataDir)).toEqual(NOTHING_LEFT);
}, 120_000);

it('SIGTERM to `npm start` reaches the app: it shuts down and frees its port and data; a second start says in one line what holds the data', async () => {
  const dataDir = await freshDataDir('shutdown-npm');
  const port = await freePort();
  const env = { PORT: String(port), JOBS_DATA_DIR: dataDir, DATABASE_URL: undefined, HOST: undefined };
  const npm = new AppProcess('npm', ['start'], env);
  started.push(npm);
  // The start script builds first.
  await npm.line(/Sample app on http:\/\/\S+/, 240_000);
  // The dashboard is public in the sample: only this machine may reach it.
  expect(listeningOn(port)).toEqual(['127.0.0.1']);

  const second = new AppProcess(process.execPath, ['dist/sample/main.js'], { ...env, PORT: String(await freePort()) });
  started.push(second);
  expect({ exit: await second.exited, stdout: second.stdout, stderr: second.stderr }).toEqual({
    exit: { code: 1, signal: null },
    stdout: '',
    stderr: expect.stringMatching(/^The embedded PostgreSQL data in [^\n]+ is in use by process \d+[^\n]*\n$/),
  });

  process.kill(npm.pid, 'SIGTERM');
  await waitFor(
    'the port and the data directory to be free',
    async () => !(await accepts(port)) && JSON.stringify(leftOn(dataDir)) === JSON.stringify(NOTHING_LEFT),
    15_000,
  );
  await npm.exited;
  // The demo's jobs fail on purpose; what must not show is a shutdown that lost its database.
  const lostDatabase = /exited unexpectedly|ECONNREFUSED|LISTEN failed|took longer than|not recorded|FATAL/;
  expect(notable(npm).filter((line) => lostDatabase.test(line))).toEqual([]);
}, 300_000);
