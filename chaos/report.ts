import type { Check } from './checks.js';
import type { RunFigures } from './database.js';
import type { UnexpectedExit } from './fleet.js';
import type { ChaosOptions } from './options.js';

export interface PostgresRestart {
  requestedAt: Date;
  /** Workers up (claiming) when the fault began. */
  workersUp: number;
  /** The server had exited (fast shutdown done). */
  downAt: Date;
  upAt: Date;
  /** With --pooler: when a query through PgBouncer was answered again. */
  poolerBackAt: Date | null;
  /** The first success written after the server came back. */
  firstSuccessAt: Date | null;
}

export interface ConnectionKill {
  at: Date;
  workersUp: number;
  terminated: number;
  firstSuccessAt: Date | null;
}

export interface RunRecord {
  options: ChaosOptions;
  setupMs: number;
  workersStartedAt: Date;
  /** All workers ready: the origin of every "+N s" in the report. */
  chaosStartedAt: Date;
  chaosEndedAt: Date;
  /** When every job had finished, or null if they had not by the deadline. */
  allDoneAt: Date | null;
  enqueued: number;
  /** --invoke: how many of the enqueued jobs were parents. */
  parents: number;
  enqueueErrors: number;
  kills: number;
  workerStarts: number;
  unexpectedExits: UnexpectedExit[];
  pgRestart: PostgresRestart | string;
  connectionKill: ConnectionKill | string;
  logPath: string;
}

export function passed(checks: readonly Check[], record: RunRecord): boolean {
  return record.allDoneAt !== null && checks.every((c) => c.passed);
}

export function formatReport(record: RunRecord, figures: RunFigures, checks: readonly Check[]): string {
  const o = record.options;
  const t0 = record.chaosStartedAt.getTime();
  const at = (d: Date) => `+${seconds(d.getTime() - t0)}`;
  const lines: string[] = [];
  const row = (label: string, text: string) => lines.push(`  ${label.padEnd(14)}${text}`);

  lines.push('', `Chaos report (seed ${o.seed}; replay with --seed ${o.seed})`);
  row(
    'setup',
    `${o.workers} workers × concurrency ${o.concurrency}, lease ${o.lease} ms, ${o.jobs} jobs ` +
      `(handlers: ${o.handlers === 'both' ? 'half in ctx.transaction(), half plain' : o.handlers}) ` +
      (o.duration > 0 ? `fed in over ${o.duration} s of chaos` : 'enqueued up front, chaos until all finished') +
      `, max ${o.maxAttempts} attempts` +
      (o.invoke > 0
        ? `; --invoke ${o.invoke}: ${record.parents} of them parents, each ctx.invoke()ing one child that does the work`
        : '') +
      (o.pooler ? `; through PgBouncer in ${o.pooler} mode (LISTEN and migrations direct)` : ''),
  );
  const end = record.allDoneAt ?? record.chaosEndedAt;
  row(
    'time',
    `${seconds(end.getTime() - t0)} from the chaos start (workers ready) to ${record.allDoneAt ? 'the last job finished' : 'the deadline (jobs unfinished)'}` +
      ` (chaos ${seconds(record.chaosEndedAt.getTime() - t0)}; setup before it ${seconds(record.setupMs)})` +
      (record.allDoneAt
        ? `; ${Math.round(record.enqueued / ((end.getTime() - record.workersStartedAt.getTime()) / 1000))} jobs/s from the first worker start`
        : ''),
  );
  row(
    'kills',
    `${record.kills} SIGKILLs every ${o.killEvery.min}–${o.killEvery.max} s; ${record.workerStarts} worker starts in all`,
  );
  const restart = record.pgRestart;
  row(
    'pg restart',
    typeof restart === 'string'
      ? restart
      : `${o.pgCrash ? 'immediate' : 'fast'} shutdown at ${at(restart.requestedAt)} with ${restart.workersUp}/${o.workers} workers up (down after ${seconds(restart.downAt.getTime() - restart.requestedAt.getTime())}), ` +
          `up again at ${at(restart.upAt)}: ${seconds(restart.upAt.getTime() - restart.downAt.getTime())} without a server; ` +
          (restart.poolerBackAt
            ? `PgBouncer answering again +${seconds(restart.poolerBackAt.getTime() - restart.upAt.getTime())}; `
            : '') +
          `first success after it ${restart.firstSuccessAt ? `+${seconds(restart.firstSuccessAt.getTime() - restart.upAt.getTime())}` : 'never'}`,
  );
  const kill = record.connectionKill;
  row(
    'conn kill',
    typeof kill === 'string'
      ? kill
      : `pg_terminate_backend on ${kill.terminated} backends at ${at(kill.at)} with ${kill.workersUp}/${o.workers} workers up; ` +
          `first success after it ${kill.firstSuccessAt ? `+${seconds(kill.firstSuccessAt.getTime() - kill.at.getTime())}` : 'never'}`,
  );
  const exits = record.unexpectedExits;
  const crashes = exits.filter((e) => e.phase === 'running');
  row(
    'worker exits',
    `${crashes.length} crash(es) of running workers, ${exits.length - crashes.length} failed start(s) ` +
      '(a start fails while PostgreSQL is down), none of them ours',
  );
  const byKind = new Map<string, number>();
  for (const e of figures.executions) {
    const key = e.state === 'interrupted' ? `interrupted (${kindOf(e.error)})` : e.state;
    byKind.set(key, (byKind.get(key) ?? 0) + e.n);
  }
  row(
    'executions',
    byKind.size
      ? [...byKind].map(([k, n]) => `${n} ${k}`).join(', ') + ` (succeeded first attempts leave no row)`
      : 'no execution rows (every job succeeded on its first attempt)',
  );
  row('attempts', `the most any job needed: ${figures.maxAttemptUsed} of ${o.maxAttempts}`);
  row(
    'side effects',
    `${figures.sideEffects} rows for ${figures.workJobs} jobs that write one (${Math.max(0, figures.sideEffects - figures.workJobs)} beyond one per job)`,
  );
  if (o.invoke > 0) {
    row(
      'invoke',
      `${record.parents} parents enqueued, ${figures.children} child rows with invoked_by (the parents write no side effect)`,
    );
  }
  row('rescue→rerun', distribution(figures.rescueDelays, 'rescues'));
  if (figures.handBackDelays.length) row('handback→rerun', distribution(figures.handBackDelays, 'hand-backs'));
  if (record.enqueueErrors) row('enqueue', `${record.enqueueErrors} enqueue call(s) failed and were retried`);
  for (const e of crashes.slice(0, 3)) {
    lines.push(`  crash of ${e.worker} at ${at(e.at)} (${e.code ?? e.signal}); its last output:`);
    for (const l of e.tail.slice(-8)) lines.push(`      ${l}`);
  }

  lines.push('', 'Checks');
  for (const c of checks) {
    lines.push(`  ${c.passed ? 'PASS' : 'FAIL'}  ${c.name.padEnd(34)}${c.summary}`);
    if (!c.passed) for (const e of c.examples) lines.push(`        ${e}`);
  }
  if (!record.allDoneAt) {
    lines.push(
      `  FAIL  ${'all jobs finished in time'.padEnd(34)}not within --timeout ${o.timeout} s of the chaos start`,
    );
  }
  lines.push('', `Run log: ${record.logPath}`);
  lines.push(passed(checks, record) ? 'CHAOS PASSED' : 'CHAOS FAILED');
  return lines.join('\n');
}

function kindOf(error: string | null): string {
  if (error === 'LeaseLostError') return 'lease rescue';
  if (error === 'WorkerShutdownError') return 'shutdown hand-back';
  return error ?? 'no error';
}

function distribution(ms: readonly number[], what: string): string {
  if (ms.length === 0) return `no ${what} followed by a rerun`;
  const sorted = [...ms].sort((a, b) => a - b);
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
  return `p50 ${seconds(q(0.5))}, p95 ${seconds(q(0.95))}, max ${seconds(sorted.at(-1)!)} over ${ms.length} ${what} (to the next claim)`;
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
