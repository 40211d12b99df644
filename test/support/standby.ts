import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import {
  freePort,
  LogTail,
  stopChild,
  track,
  untrack,
  type LiveServer,
} from '../../lib/storage/embedded/server-process.js';

const run = promisify(execFile);
const TOOLS = ['initdb', 'postgres', 'pg_basebackup'] as const;

/** A primary and a hot standby streaming from it, both started by the test from real PostgreSQL binaries. */
export interface StandbyPair {
  primaryUrl: string;
  replicaUrl: string;
  /** A query on the primary or the replica, on a connection of its own. */
  onPrimary<T = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  onReplica<T = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  /** Waits until the replica has replayed everything the primary has written so far. */
  caughtUp(timeoutMs?: number): Promise<void>;
  /** The standby's log lines so far that match `pattern` (its server log: every refused write is there). */
  replicaLogLines(pattern: RegExp): string[];
  /** Stops the standby only (fast shutdown): the primary runs on. */
  stopReplica(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The server binaries with pg_basebackup: JOBS_TEST_PG_BIN, else the newest
 * /usr/lib/postgresql/<major>/bin (Debian's layout), else pg_config's.
 * The embedded package ships no pg_basebackup, so it cannot stand in.
 */
async function serverBinaries(): Promise<string> {
  const has = (dir: string) => TOOLS.every((t) => existsSync(path.join(dir, t)));
  const candidates: string[] = [];
  if (process.env.JOBS_TEST_PG_BIN) candidates.push(process.env.JOBS_TEST_PG_BIN);
  if (existsSync('/usr/lib/postgresql')) {
    const majors = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
    candidates.push(...majors.map((m) => `/usr/lib/postgresql/${m}/bin`));
  }
  const fromConfig = await run('pg_config', ['--bindir']).then(
    (r) => r.stdout.trim(),
    () => null,
  );
  if (fromConfig) candidates.push(fromConfig);
  const found = candidates.find(has);
  if (!found) {
    throw new Error(
      `No PostgreSQL server binaries with ${TOOLS.join(', ')} were found (looked in ${candidates.join(', ') || 'JOBS_TEST_PG_BIN, /usr/lib/postgresql/*/bin, pg_config --bindir'}), ` +
        'so the replica tests cannot start a standby. Install the PostgreSQL server package, or set JOBS_TEST_PG_BIN.',
    );
  }
  return found;
}

/** PostgreSQL refuses to run as root: as root, the servers run as OS user postgres. */
async function osIds(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout.trim());
  try {
    return { uid: await id('-u'), gid: await id('-g') };
  } catch {
    throw new Error('The replica tests run as root and there is no OS user "postgres" to run PostgreSQL as.');
  }
}

async function tool(bin: string, name: string, args: string[], ids: { uid: number; gid: number } | undefined) {
  try {
    await run(path.join(bin, name), args, { ...(ids ?? {}), env: { ...process.env, LC_ALL: 'C' } });
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`${name} failed: ${e.stderr?.trim() || e.message}`, { cause: error });
  }
}

/** Starts `postgres -D dir` and waits until it accepts connections. */
async function startServer(
  bin: string,
  dir: string,
  port: number,
  ids: { uid: number; gid: number } | undefined,
): Promise<LiveServer & { log: LogTail; lines: string[] }> {
  const log = new LogTail();
  const lines: string[] = [];
  log.onLine = (line) => lines.push(line);
  const child: ChildProcess = spawn(path.join(bin, 'postgres'), ['-D', dir, '-p', String(port)], {
    ...(ids ?? {}),
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LC_ALL: 'C' },
  });
  child.stdout!.on('data', (d: Buffer) => log.add(d.toString()));
  child.stderr!.on('data', (d: Buffer) => log.add(d.toString()));
  const server = { child, log, lines, removeTraces: () => undefined };
  track(server);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  for (const end = Date.now() + 30_000; ;) {
    if (child.exitCode !== null) throw new Error(`PostgreSQL in ${dir} exited at start. ${log.text()}`);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return server;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (Date.now() > end)
        throw new Error(`PostgreSQL in ${dir} did not accept connections: ${String(error)}. ${log.text()}`, {
          cause: error,
        });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function query<T>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * initdb a primary (WAL for replicas, trust on 127.0.0.1), start it,
 * `pg_basebackup -R` a standby from it, start that as a hot standby, and
 * wait until it streams. Throws, saying why, when any step fails.
 */
export async function startStandbyPair(): Promise<StandbyPair> {
  const bin = await serverBinaries();
  const ids = await osIds();
  const base = await fs.mkdtemp(path.join(os.tmpdir(), 'jobs-standby-'));
  if (ids) await fs.chown(base, ids.uid, ids.gid);
  const primaryDir = path.join(base, 'primary');
  const replicaDir = path.join(base, 'replica');
  const servers: LiveServer[] = [];
  const stop = async () => {
    for (const server of servers.reverse()) {
      await stopChild(server.child);
      untrack(server);
    }
    await fs.rm(base, { recursive: true, force: true });
  };
  try {
    await tool(bin, 'initdb', ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8'], ids);
    const settings = [
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${base}'`,
      'wal_level = replica',
      'max_wal_senders = 4',
      'max_connections = 60',
      'shared_buffers = 32MB',
      // Test clusters: a crash loses them anyway; the replication under test does not depend on fsync.
      'fsync = off',
      'hot_standby = on',
    ];
    await fs.appendFile(path.join(primaryDir, 'postgresql.conf'), `\n${settings.join('\n')}\n`);
    const [primaryPort, replicaPort] = [await freePort(), await freePort()];
    const primary = await startServer(bin, primaryDir, primaryPort, ids);
    servers.push(primary);
    await tool(
      bin,
      'pg_basebackup',
      [
        '-h',
        '127.0.0.1',
        '-p',
        String(primaryPort),
        '-U',
        'postgres',
        '-D',
        replicaDir,
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
      ],
      ids,
    );
    const replica = await startServer(bin, replicaDir, replicaPort, ids);
    servers.push(replica);
    const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`;
    const replicaUrl = `postgres://postgres@127.0.0.1:${replicaPort}/postgres`;
    const [{ standby }] = (await query<{ standby: boolean }>(replicaUrl, 'SELECT pg_is_in_recovery() AS standby')) as [
      { standby: boolean },
    ];
    if (!standby) throw new Error(`The server from pg_basebackup -R is not in recovery. ${replica.log.text()}`);
    const pair: StandbyPair = {
      primaryUrl,
      replicaUrl,
      onPrimary: (text, values) => query(primaryUrl, text, values),
      onReplica: (text, values) => query(replicaUrl, text, values),
      async caughtUp(timeoutMs = 20_000) {
        const [{ lsn }] = (await query<{ lsn: string }>(
          primaryUrl,
          'SELECT pg_current_wal_insert_lsn()::text AS lsn',
        )) as [{ lsn: string }];
        for (const end = Date.now() + timeoutMs; ;) {
          const [{ behind }] = (await query<{ behind: boolean }>(
            replicaUrl,
            'SELECT pg_last_wal_replay_lsn() < $1::pg_lsn AS behind',
            [lsn],
          )) as [{ behind: boolean }];
          if (!behind) return;
          if (Date.now() > end) throw new Error(`The standby did not replay up to ${lsn} within ${timeoutMs} ms`);
          await new Promise((r) => setTimeout(r, 50));
        }
      },
      replicaLogLines: (pattern) => replica.lines.filter((line) => pattern.test(line)),
      async stopReplica() {
        await stopChild(replica.child);
        untrack(replica);
      },
      stop,
    };
    await pair.caughtUp();
    return pair;
  } catch (error) {
    await stop();
    throw error;
  }
}
