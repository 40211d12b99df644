/**
 * The server process and what a killed run left behind: signalling with
 * escalation, telling a live server from a zombie or an orphan, and making
 * sure process.exit() leaves no server running.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';

export type Warn = (msg: string) => void;

const STOP_SIGNALS = [
  ['SIGINT', 15_000],
  ['SIGQUIT', 5_000],
  ['SIGKILL', 5_000],
] as const;

/** Running servers, signalled from one 'exit' listener so that process.exit() leaves no orphan. */
const liveServers = new Set<ChildProcess>();

/**
 * A run killed by SIGKILL leaves either a stale postmaster.pid (PostgreSQL copes, unless the pid
 * was reused, common in containers) or a running orphan server that holds the data dir. A server
 * whose parent is the process in owner.pid is in use and is never touched.
 */
export async function clearLeftoverServer(clusterDir: string, dataDir: string, warn: Warn): Promise<void> {
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

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid) await terminate(child.pid, () => child.exitCode !== null || child.signalCode !== null);
}

function killLiveServersOnExit(): void {
  for (const child of liveServers) child.kill('SIGINT');
}

export function track(child: ChildProcess): void {
  if (liveServers.size === 0) process.on('exit', killLiveServersOnExit);
  liveServers.add(child);
}

export function untrack(child: ChildProcess): void {
  if (liveServers.delete(child) && liveServers.size === 0) {
    process.removeListener('exit', killLiveServersOnExit);
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
