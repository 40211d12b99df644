/**
 * Apps and embedded servers as real processes, for the tests of signals and shutdown: a child
 * that leads its own process group (so a test can signal the group as a terminal does), its
 * output, and the processes left on an embedded cluster.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from './wait.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class AppProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<Exit>;
  private out = '';
  private err = '';

  constructor(command: string, args: readonly string[], env: Record<string, string | undefined>) {
    const merged: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', ...env };
    for (const [key, value] of Object.entries(env)) if (value === undefined) delete merged[key];
    this.child = spawn(command, args, { cwd: ROOT, env: merged, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child.stdout!.on('data', (chunk: Buffer) => (this.out += chunk.toString()));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.err += chunk.toString()));
    // 'close' rather than 'exit': the output is complete by then.
    this.exited = new Promise((resolve) => this.child.once('close', (code, signal) => resolve({ code, signal })));
  }

  get pid(): number {
    return this.child.pid!;
  }

  get stdout(): string {
    return this.out;
  }

  get stderr(): string {
    return this.err;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The first line of stdout matching `pattern`; fails early if the process ends without one. */
  async line(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    const find = () =>
      this.out
        .split('\n')
        .find((l) => pattern.test(l))
        ?.match(pattern);
    while (this.running && Date.now() < deadline && !find()) await sleep(25);
    // Once it exited, its last output is in only after 'close'.
    if (!this.running) await this.exited;
    const found = find();
    if (found) return found;
    const why = this.running ? `${timeoutMs} ms passed` : `the process exited (${JSON.stringify(await this.exited)})`;
    throw new Error(`No line matching ${pattern}: ${why}.\nstdout:\n${this.out}\nstderr:\n${this.err}`);
  }

  /** Ends the whole group, whatever it still runs: for clean-up after a failed test. */
  killGroup(): void {
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** Every process started on the cluster: the postmaster names it, its backends run inside it. */
export function processesOn(clusterDir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cmdline.includes(clusterDir) || cwd === clusterDir) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/** For clean-up after a failed test: servers a killed app left on the cluster. */
export function killServersOn(clusterDir: string): void {
  for (const pid of processesOn(clusterDir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** What an embedded server on `dataDir` leaves while it runs, or after an unclean end. */
export function leftOn(dataDir: string): { processes: number[]; ownerPid: boolean; postmasterPid: boolean } {
  const cluster = path.join(dataDir, 'pgdata');
  return {
    processes: processesOn(cluster),
    ownerPid: existsSync(path.join(dataDir, 'owner.pid')),
    postmasterPid: existsSync(path.join(cluster, 'postmaster.pid')),
  };
}
export const NOTHING_LEFT = { processes: [], ownerPid: false, postmasterPid: false };
