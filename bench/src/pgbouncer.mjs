// A real PgBouncer in front of the bench's PostgreSQL, for the scenarios whose workers connect
// through a transaction pooler. The approach of test/support/pgbouncer.ts, in plain JS for the
// bench's Node: Debian's /usr/sbin/pgbouncer with PgBouncer's defaults (default_pool_size 20,
// nothing in ignore_startup_parameters), as most deployments leave them.
//
// PgBouncer refuses to run as root: as root it runs as the `postgres` OS user, through setpriv, so
// that the spawned process is PgBouncer itself and gets a parent-death signal: if the bench dies,
// even by SIGKILL, PgBouncer gets SIGTERM and does not outlive it.
import { execFileSync, spawn } from 'node:child_process';
import { accessSync, chownSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';

const BINARY = '/usr/sbin/pgbouncer';
const READY_WITHIN_MS = 10_000;
const RUN_AS = 'postgres';

/** `PgBouncer 1.18.0`, or throws with what to install when the binary is missing. */
export function pgbouncerVersion() {
  try {
    accessSync(BINARY, constants.X_OK);
  } catch {
    throw new Error(
      `the PgBouncer scenarios need ${BINARY} (Debian's package: apt-get install pgbouncer); ` +
        'leave them out with --scenarios, or install it',
    );
  }
  return execFileSync(BINARY, ['--version'], { encoding: 'utf8' }).split('\n')[0].trim();
}

/**
 * Starts PgBouncer in `mode` ('transaction' or 'session') in front of `upstream` (a postgres://
 * URL: PgBouncer logs in with its user and password) on a free port of 127.0.0.1. Resolves to
 * `{ url, version, stop() }`: `url` is `upstream` with PgBouncer's host and port.
 */
export async function startPgBouncer({ mode, upstream: upstreamUrl }) {
  const version = pgbouncerVersion();
  const upstream = new URL(upstreamUrl);
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-pgbouncer-'));
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
      // No unix socket: the default, /tmp, may hold another PgBouncer's (the test suite's) on the same port.
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${files.users}`,
      `pool_mode = ${mode}`,
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
  child.stderr.on('data', (chunk) => (stderr += chunk.toString()));
  const exited = new Promise((resolve) => child.once('close', resolve));
  const spawnFailed = new Promise((resolve) => child.once('error', resolve));
  const why = (what) =>
    new Error(
      `PgBouncer (${mode} mode, port ${port}, in front of ${upstream.host}) ${what}.\n` +
        `stderr:\n${stderr}\nlog, last lines:\n${logTail(files.log)}`,
    );
  const url = new URL(upstreamUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);

  const deadline = Date.now() + READY_WITHIN_MS;
  try {
    for (;;) {
      const outcome = await Promise.race([
        answers(url.href).then((ok) => (ok ? 'ready' : 'not yet')),
        exited.then(() => 'exited'),
        spawnFailed,
      ]);
      if (outcome === 'ready') break;
      if (outcome instanceof Error) throw why(`could not start (${outcome.message})`);
      if (outcome === 'exited') throw why(`exited (code ${child.exitCode}, signal ${child.signalCode})`);
      if (Date.now() > deadline) throw why(`did not accept connections within ${READY_WITHIN_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (e) {
    // The error carries the log's last lines; nothing of this PgBouncer is left behind.
    await stopChild(child, exited);
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    url: url.href,
    version,
    async stop() {
      await stopChild(child, exited);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// SIGTERM is PgBouncer's immediate shutdown: the scenario's workers are gone by then.
async function stopChild(child, exited) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await exited;
}

async function answers(url) {
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

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function osUser(name) {
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === name);
  if (!entry) throw new Error(`PgBouncer refuses to run as root, and there is no "${name}" OS user to run it as`);
  return { uid: Number(entry[2]), gid: Number(entry[3]) };
}

function quoted(value) {
  return `"${value.replace(/"/g, '""')}"`;
}

function logTail(file) {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-20).join('\n');
  } catch {
    return '(none)';
  }
}
