/**
 * The server process and what a killed run left behind: signalling with
 * escalation, telling a live server from a zombie or an orphan, and making
 * sure that the host's end (process.exit(), or a signal nothing else
 * handles) leaves no server running.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { JobsError } from '../../model/index.js';

type Warn = (msg: string) => void;

const STOP_SIGNALS = [
  ['SIGINT', 15_000],
  ['SIGQUIT', 5_000],
  ['SIGKILL', 5_000],
] as const;
/** Signals that end a process by default, and that a terminal or a process manager sends. */
const ENDING_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const HAS_PROC = existsSync('/proc/self/stat');

export interface LiveServer {
  child: ChildProcess;
  /** Synchronous: what the server's end leaves to remove (its owner.pid). */
  removeTraces(): void;
}

/**
 * Running servers. They run detached (a terminal's Ctrl-C does not reach them, so that they
 * outlive the app's drain), so nothing stops them with the host unless these listeners do.
 */
const liveServers = new Set<LiveServer>();

/**
 * A run killed by SIGKILL leaves either a stale postmaster.pid (PostgreSQL copes, unless the pid
 * was reused, common in containers) or a running orphan server that holds the data dir. A server
 * whose parent is the process in owner.pid is in use and is never touched.
 */
export async function clearLeftoverServer(clusterDir: string, dataDir: string, warn: Warn): Promise<void> {
  if (!HAS_PROC) return; // Without /proc, PostgreSQL's own check decides.
  const readInt = async (file: string) => parseInt(await fs.readFile(file, 'utf8').catch(() => ''));
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  const pid = await readInt(pidFile);
  if (!(pid > 0)) return;
  const args = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
  const servesUs = args.includes('-D') && path.resolve(args[args.indexOf('-D') + 1] ?? '') === clusterDir;
  if (servesUs && isAlive(pid)) {
    const owner = await readInt(path.join(dataDir, 'owner.pid'));
    if (procStat(pid)?.ppid === owner) {
      throw new JobsError(
        `The embedded PostgreSQL data in ${dataDir} is in use by process ${owner} (server pid ${pid}). ` +
          `Potential fix: stop that process, or give this one another data directory`,
      );
    }
    warn(`Stopping the PostgreSQL (pid ${pid}) a killed process left running on ${clusterDir}`);
    if (!(await terminate(pid, () => !isAlive(pid)))) {
      throw new JobsError(`PostgreSQL ${pid} survives SIGKILL. Potential fix: reboot, or another dataDir`);
    }
  }
  await fs.rm(pidFile, { force: true });
}

// Synchronous, so that the exit path can use it too.
function procStat(pid: number): { state: string; ppid: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name may hold spaces and parentheses; the fields after its last ')' are fixed.
  const [state = '', ppid = ''] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state, ppid: Number(ppid) };
}

function isAlive(pid: number): boolean {
  // A zombie still answers kill(pid, 0); orphans stay zombies under a PID 1 that never reaps.
  const state = procStat(pid)?.state;
  return state !== undefined && state !== 'Z' && state !== 'X';
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Exited between the check and the signal.
  }
}

/** Signals with escalation until `gone()`; SIGINT is PostgreSQL's fast shutdown. */
async function terminate(pid: number, gone: () => boolean): Promise<boolean> {
  for (const [name, waitMs] of STOP_SIGNALS) {
    if (gone()) return true;
    signal(pid, name);
    for (const end = Date.now() + waitMs; Date.now() < end && !gone();) await sleep(20);
  }
  return gone();
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid) await terminate(child.pid, () => child.exitCode !== null || child.signalCode !== null);
}

/**
 * The same escalation with the event loop stopped (in 'exit', or before a signal ends the
 * process): our child cannot be reaped then, so its exit shows as a zombie in /proc. Without
 * /proc it gets the fast-shutdown signal and finishes on its own.
 */
function stopNow(server: LiveServer): void {
  const pid = server.child.pid;
  if (!pid) return;
  if (!HAS_PROC) {
    signal(pid, 'SIGINT');
    return;
  }
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const [name, waitMs] of STOP_SIGNALS) {
    if (!isAlive(pid)) break;
    signal(pid, name);
    for (const end = Date.now() + waitMs; Date.now() < end && isAlive(pid);) Atomics.wait(pause, 0, 0, 10);
  }
  if (!isAlive(pid)) server.removeTraces();
}

function stopAllNow(): void {
  for (const server of [...liveServers]) {
    stopNow(server);
    untrack(server);
  }
}

/**
 * A signal that nothing else handles would end the process on the spot, with no 'exit' event.
 * Where the app handles it (Nest's shutdown hooks, its own listener), this does nothing: the app
 * drains, then stops the server or exits. Alone, it stops the server and re-raises the signal,
 * so the process ends as it would have. Added in front, so that it sees every other listener.
 */
function onEndingSignal(name: NodeJS.Signals): void {
  if (process.listenerCount(name) > 1) return;
  stopAllNow();
  signal(process.pid, name);
}

export function track(server: LiveServer): void {
  if (liveServers.size === 0) {
    process.on('exit', stopAllNow);
    for (const name of ENDING_SIGNALS) process.prependListener(name, onEndingSignal);
  }
  liveServers.add(server);
}

export function untrack(server: LiveServer): void {
  if (liveServers.delete(server) && liveServers.size === 0) {
    process.removeListener('exit', stopAllNow);
    for (const name of ENDING_SIGNALS) process.removeListener(name, onEndingSignal);
  }
}

export function freePort(): Promise<number> {
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

/** The last lines PostgreSQL printed, so that errors can show its own reason. */
export class LogTail {
  private readonly lines: string[] = [];
  private partial = '';
  onLine?: (line: string) => unknown;

  /** Output arrives in chunks that may end mid-line; a line counts once it is complete. */
  add(chunk: string): void {
    const parts = (this.partial + chunk).split('\n');
    this.partial = parts.pop() ?? '';
    for (const line of parts.filter((l) => l.trim())) {
      this.lines.push(line);
      if (this.lines.length > 40) this.lines.shift();
      this.onLine?.(line);
    }
  }

  text(): string {
    const lines = [...this.lines, ...(this.partial.trim() ? [this.partial] : [])].join('\n');
    return lines ? `PostgreSQL output:\n${lines}` : '(no output from PostgreSQL)';
  }
}
