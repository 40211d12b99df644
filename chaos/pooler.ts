/**
 * --pooler: a real PgBouncer (test/support/pgbouncer.ts: Debian's, at its
 * defaults) between the workers and the enqueuer and the chaos' embedded
 * PostgreSQL. How many connections each may open through it: chaos/pooler-sizing.ts.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { startPgBouncer, type PgBouncer } from '../test/support/pgbouncer.js';
import { query } from './database.js';
import type { PoolerMode } from './options.js';

export interface ChaosPooler {
  mode: PoolerMode;
  /** The server's URL with PgBouncer's host and port. */
  url: string;
  pid: number;
  /** Whether the PgBouncer process still runs. */
  alive(): boolean;
  /**
   * Waits until a query through PgBouncer is answered (after the server came
   * back); resolves with the time it answered, rejects after `withinMs`.
   */
  serving(withinMs: number): Promise<Date>;
  /** Stops it, first copying its log to `logCopy` (best effort) for a look after the run. */
  stop(logCopy: string): Promise<void>;
}

export async function startChaosPooler(mode: PoolerMode, upstream: string): Promise<ChaosPooler> {
  const bouncer = await startPgBouncer({ mode, upstream });
  let stopped: Promise<void> | null = null;
  return {
    mode,
    url: bouncer.url,
    pid: bouncer.pid,
    alive: () => isRunning(bouncer.pid),
    serving: async (withinMs) => {
      const deadline = Date.now() + withinMs;
      let last: unknown;
      for (;;) {
        if (!isRunning(bouncer.pid)) throw new Error(`PgBouncer (pid ${bouncer.pid}) is gone`);
        try {
          await query(bouncer.url, 'SELECT 1');
          return new Date();
        } catch (error) {
          last = error;
        }
        if (Date.now() > deadline) {
          throw new Error(
            `PgBouncer (${mode} mode) answered no query within ${withinMs} ms of the server's restart: ${(last as Error)?.message}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    stop: (logCopy) => (stopped ??= copyLog(bouncer, logCopy).then(() => bouncer.stop())),
  };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * stop() removes PgBouncer's folder, its log with it. The harness does not
 * say where that folder is, but PgBouncer's command line names its ini file,
 * and the log lies beside it (test/support/pgbouncer.ts).
 */
async function copyLog(bouncer: PgBouncer, to: string): Promise<void> {
  try {
    const args = (await fs.readFile(`/proc/${bouncer.pid}/cmdline`, 'utf8')).split('\0').filter(Boolean);
    const ini = args.find((a) => a.endsWith('.ini'));
    if (ini) await fs.copyFile(path.join(path.dirname(ini), 'pgbouncer.log'), to);
  } catch {
    // Only a help for a look after the run.
  }
}
