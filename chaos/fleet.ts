import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RunLog } from './log.js';
import type { PoolerMode } from './options.js';
import type { Random } from './random.js';

const LOADER = fileURLToPath(new URL('../test/support/register-swc.mjs', import.meta.url));
const ENTRY = fileURLToPath(new URL('./worker.ts', import.meta.url));
/** A worker that is not claiming by then is killed and started again (it counts as a failed start). */
const READY_TIMEOUT_MS = 60_000;
const RESPAWN_DELAY_MS = 500;

export interface FleetSettings {
  count: number;
  /** Where the workers connect: the server, or PgBouncer in front of it. */
  databaseUrl: string;
  /** Set when databaseUrl is PgBouncer's (--pooler). */
  pooler: {
    mode: PoolerMode;
    /** The server's own URL: the workers' directConnection. */
    directUrl: string;
    /** Each worker's maxConnections, or null for the library's budget around poolSize. */
    maxConnections: number | null;
  } | null;
  lease: number;
  concurrency: number;
  synchronousCommit: boolean;
  log: RunLog;
}

/** A worker exit we did not cause. */
export interface UnexpectedExit {
  worker: string;
  pid: number;
  /** Before "ready": a start that failed (expected while PostgreSQL is down); after: a crash. */
  phase: 'start' | 'running';
  code: number | null;
  signal: NodeJS.Signals | null;
  at: Date;
  tail: string[];
}

interface Slot {
  name: string;
  generation: number;
  child: ChildProcess | null;
  ready: boolean;
  killedByUs: boolean;
  tail: string[];
}

/**
 * The worker processes: each slot always has one running (started again
 * after a SIGKILL or a crash) until the fleet stops.
 */
export class WorkerFleet {
  private readonly slots: Slot[];
  private stopping = false;
  kills = 0;
  starts = 0;
  readonly unexpected: UnexpectedExit[] = [];

  constructor(private readonly settings: FleetSettings) {
    this.slots = Array.from({ length: settings.count }, (_, i) => ({
      name: `w${i + 1}`,
      generation: 0,
      child: null,
      ready: false,
      killedByUs: false,
      tail: [],
    }));
  }

  /** Starts every worker; resolves once all are claiming. */
  async start(): Promise<void> {
    for (const slot of this.slots) this.spawn(slot);
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (!this.slots.every((s) => s.ready)) {
      if (Date.now() > deadline) throw new Error(`workers not ready after ${READY_TIMEOUT_MS} ms; see the run log`);
      const failed = this.unexpected.filter((u) => u.phase === 'start');
      if (failed.length >= this.settings.count * 3) {
        throw new Error(`workers keep failing to start; the last said:\n${failed.at(-1)!.tail.join('\n')}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  readyCount(): number {
    return this.slots.filter((s) => s.ready).length;
  }

  /** SIGKILLs one running worker, chosen at random; it is started again at once. */
  killRandom(random: Random): string | null {
    const candidates = this.slots.filter((s) => s.ready && s.child && !s.killedByUs);
    if (candidates.length === 0) return null;
    const slot = random.pick(candidates);
    const label = this.label(slot);
    slot.killedByUs = true;
    slot.child!.kill('SIGKILL');
    this.kills++;
    this.settings.log.write('chaos', `SIGKILL ${label}`);
    return label;
  }

  /** Stops every worker: SIGTERM (graceful: hands running jobs back), SIGKILL after `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    const live = this.slots.map((s) => s.child).filter((c): c is ChildProcess => c !== null);
    for (const child of live) child.kill('SIGTERM');
    const exited = Promise.all(live.map((c) => exitOf(c)));
    const timer = new Promise((r) => setTimeout(r, graceMs).unref());
    if ((await Promise.race([exited.then(() => 'done'), timer])) !== 'done') {
      this.settings.log.write('chaos', `workers still running ${graceMs} ms after SIGTERM: SIGKILL`);
      this.killAllNow();
      await exited;
    }
  }

  /** For exit paths that cannot wait: SIGKILL everything, synchronously. */
  killAllNow(): void {
    this.stopping = true;
    for (const slot of this.slots) slot.child?.kill('SIGKILL');
  }

  private label(slot: Slot): string {
    return `${slot.name}#${slot.generation}[${slot.child?.pid ?? '-'}]`;
  }

  private spawn(slot: Slot): void {
    slot.generation++;
    slot.ready = false;
    slot.killedByUs = false;
    slot.tail = [];
    this.starts++;
    const child = spawn(process.execPath, ['--import', LOADER, ENTRY], {
      env: {
        ...process.env,
        CHAOS_DATABASE_URL: this.settings.databaseUrl,
        CHAOS_LEASE: String(this.settings.lease),
        CHAOS_CONCURRENCY: String(this.settings.concurrency),
        CHAOS_SYNCHRONOUS_COMMIT: this.settings.synchronousCommit ? '1' : '',
        CHAOS_POOLER: this.settings.pooler?.mode ?? '',
        CHAOS_DIRECT_URL: this.settings.pooler?.directUrl ?? '',
        CHAOS_MAX_CONNECTIONS: String(this.settings.pooler?.maxConnections ?? ''),
        NODE_OPTIONS: '',
        // The run log is a file: no colour codes in it.
        NO_COLOR: '1',
      },
      // stdin stays open and unused: its end tells the worker that we are gone.
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    slot.child = child;
    const label = this.label(slot);
    const { log } = this.settings;
    const readyTimer = setTimeout(() => {
      if (slot.child === child && !slot.ready) {
        log.write('chaos', `${label} not ready after ${READY_TIMEOUT_MS} ms: SIGKILL`);
        child.kill('SIGKILL');
      }
    }, READY_TIMEOUT_MS).unref();
    const remember = (text: string) => {
      log.write(label, text);
      slot.tail.push(...text.split('\n').filter((l) => l.trim()));
      if (slot.tail.length > 30) slot.tail.splice(0, slot.tail.length - 30);
    };
    let early = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      // Nest writes its warnings to stdout too; "ready" may arrive split across chunks.
      if (!slot.ready && slot.child === child) {
        early += chunk;
        if (/^ready$/m.test(early)) {
          slot.ready = true;
          early = '';
          log.write('chaos', `${label} ready`);
        }
      }
      remember(chunk);
    });
    child.stderr!.setEncoding('utf8').on('data', remember);
    // A worker killed mid-write must not take us down with EPIPE.
    child.stdin!.on('error', () => undefined);
    child.once('exit', (code, signal) => {
      clearTimeout(readyTimer);
      if (slot.child !== child) return;
      slot.child = null;
      const wasReady = slot.ready;
      slot.ready = false;
      if (this.stopping) return;
      if (slot.killedByUs) {
        this.spawn(slot);
        return;
      }
      const exit: UnexpectedExit = {
        worker: label,
        pid: child.pid ?? -1,
        phase: wasReady ? 'running' : 'start',
        code,
        signal,
        at: new Date(),
        tail: [...slot.tail],
      };
      this.unexpected.push(exit);
      log.write(
        'chaos',
        `${label} exited on its own (${code ?? signal}) ${wasReady ? 'while running' : 'during start'}`,
      );
      setTimeout(() => {
        if (!this.stopping && slot.child === null) this.spawn(slot);
      }, RESPAWN_DELAY_MS).unref();
    });
  }
}

function exitOf(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}
