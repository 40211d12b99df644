/**
 * A real PgBouncer in front of a PostgreSQL server, for the suites that run through a connection
 * pooler (JOBS_TEST_POOLER). Its settings are PgBouncer's defaults wherever the tests can live with
 * them: default_pool_size 20 and nothing in ignore_startup_parameters, as most deployments leave
 * them, so the library meets what it will meet in production.
 *
 * PgBouncer refuses to run as root: as root it runs as the `postgres` OS user, through setpriv
 * rather than runuser, so that the spawned process is PgBouncer itself (a signal reaches it, not a
 * wrapper) and so that it gets a parent-death signal: if the process that started it dies, even by
 * SIGKILL, the kernel sends PgBouncer SIGTERM and it does not outlive the test run. What such a death
 * leaves is its temporary folder (ini, log) under the OS's tmpdir.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';

export type PoolerMode = 'transaction' | 'session';

export interface PgBouncerOptions {
  mode: PoolerMode;
  /** The server it pools for, as a postgres:// URL; its user and password are the ones PgBouncer logs in with. */
  upstream: string;
  /** Default: a free port on 127.0.0.1. */
  port?: number;
}

export interface PgBouncer {
  /** `upstream` with PgBouncer's host and port. */
  url: string;
  port: number;
  pid: number;
  stop(): Promise<void>;
}

const BINARY = '/usr/sbin/pgbouncer';
const READY_WITHIN_MS = 10_000;
/** The OS user it runs as when started by root, which it refuses to run as. */
const RUN_AS = 'postgres';

export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  const upstream = new URL(options.upstream);
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(path.join(tmpdir(), 'jobs-pgbouncer-'));
  const files = {
    ini: path.join(dir, 'pgbouncer.ini'),
    users: path.join(dir, 'userlist.txt'),
    log: path.join(dir, 'pgbouncer.log'),
    pid: path.join(dir, 'pgbouncer.pid'),
  };
  const user = decodeURIComponent(upstream.username) || 'postgres';
  // With auth_type trust clients give no password, and PgBouncer logs in to the server with this one.
  writeFileSync(files.users, `${quoted(user)} ${quoted(decodeURIComponent(upstream.password))}\n`, { mode: 0o600 });
  writeFileSync(
    files.ini,
    [
      '[databases]',
      `* = host=${upstream.hostname.replace(/^\[|\]$/g, '')} port=${upstream.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      // No unix socket: the default, /tmp, may hold another PgBouncer's on the same port.
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${files.users}`,
      `pool_mode = ${options.mode}`,
      `logfile = ${files.log}`,
      `pidfile = ${files.pid}`,
      '',
    ].join('\n'),
  );
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { uid, gid } = osUser(RUN_AS);
    for (const file of [dir, files.ini, files.users]) chownSync(file, uid, gid);
  }
  const [command, args] = asRoot
    ? [
        'setpriv',
        ['--reuid', RUN_AS, '--regid', RUN_AS, '--init-groups', '--pdeathsig', 'TERM', '--', BINARY, files.ini],
      ]
    : ['setpriv', ['--pdeathsig', 'TERM', '--', BINARY, files.ini]];
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const spawnFailed = new Promise<Error>((resolve) => child.once('error', resolve));
  const why = (what: string) =>
    new Error(
      `PgBouncer (${options.mode} mode, port ${port}, in front of ${upstream.host}) ${what}.\n` +
        `Its last lines (it logs to stderr as well as to its logfile):\n${lastLines(stderr)}`,
    );
  const url = new URL(options.upstream);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  // The one user of its auth_file: a URL without one would log in as the OS user, whom PgBouncer refuses.
  url.username = encodeURIComponent(user);

  const deadline = Date.now() + READY_WITHIN_MS;
  for (;;) {
    const outcome = await Promise.race([
      answers(url.href).then((ok) => (ok ? 'ready' : 'not yet')),
      exited.then(() => 'exited' as const),
      spawnFailed,
    ]);
    if (outcome === 'ready') break;
    const failure =
      outcome instanceof Error
        ? why(`could not start (${outcome.message}; is ${BINARY} installed?)`)
        : outcome === 'exited'
          ? why(`exited (code ${child.exitCode}, signal ${child.signalCode})`)
          : Date.now() > deadline
            ? why(`did not accept connections within ${READY_WITHIN_MS} ms`)
            : null;
    if (failure) {
      await stopChild(child, exited);
      rmSync(dir, { recursive: true, force: true });
      throw failure;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url: url.href,
    port,
    pid: child.pid!,
    stop: async () => {
      await stopChild(child, exited);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** SIGTERM is PgBouncer's immediate shutdown: clients are dropped, which a test run's end can afford. */
async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  // No pid: it never started, and there is nothing to wait for.
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await exited;
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function osUser(name: string): { uid: number; gid: number } {
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === name);
  if (!entry) throw new Error(`PgBouncer refuses to run as root, and there is no "${name}" OS user to run it as`);
  return { uid: Number(entry[2]), gid: Number(entry[3]) };
}

function quoted(value: string): string {
  return `"${value.replace(/"/g, '""')}"`;
}

function lastLines(text: string): string {
  return text.trimEnd().split('\n').slice(-20).join('\n') || '(none)';
}
