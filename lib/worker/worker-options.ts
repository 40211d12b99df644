/** The worker of this instance: whether it runs, what it serves, and how it claims, leases and shuts down. */
export interface WorkerOptions {
  /** false for API-only instances that enqueue but never run jobs. */
  enabled?: boolean;
  /** Jobs run at once by this instance; default 10. */
  concurrency?: number;
  /** Queues to serve; default every queue. An array is a priority order. */
  queues?: string[];
  /** Fallback look for work when no notification came, in ms; default 1000. */
  pollInterval?: number;
  /** How long a claim holds a job without renewal, in ms; default 30 000. */
  lease?: number;
  /** How long shutdown waits for running jobs before handing them back, in ms; default 10 000. */
  shutdownGrace?: number;
  /**
   * Jobs claimed ahead of free slots, so one statement claims many.
   * Default: adaptive, about 100 ms of work at the current completion rate,
   * at most 500 — large for fast jobs, none for slow ones, so a slow queue
   * is not hoarded by one instance. Prefetched jobs keep their lease.
   */
  prefetch?: number;
  /** How often progress may be written per job, in ms; default 500. */
  progressThrottle?: number;
  /**
   * Wait for the WAL flush when committing claims and outcomes; default
   * false. Off, a PostgreSQL crash can undo the last fraction of a second of
   * them, and those jobs run again — never lost, since enqueues always wait.
   * About 20% more throughput here. Enqueues, cancel and retry always wait.
   */
  synchronousCommit?: boolean;
}

export type ResolvedWorkerOptions = Required<Omit<WorkerOptions, 'queues' | 'prefetch'>> & {
  queues: string[] | null;
  /** null: adaptive. */
  prefetch: number | null;
};

export const WORKER_OPTIONS = Symbol('WORKER_OPTIONS');

export function resolveWorkerOptions(o: WorkerOptions = {}): ResolvedWorkerOptions {
  const concurrency = o.concurrency ?? 10;
  return {
    enabled: o.enabled ?? true,
    concurrency,
    queues: o.queues && o.queues.length ? [...o.queues] : null,
    pollInterval: o.pollInterval ?? 1000,
    lease: o.lease ?? 30_000,
    shutdownGrace: o.shutdownGrace ?? 10_000,
    prefetch: o.prefetch ?? null,
    progressThrottle: o.progressThrottle ?? 500,
    synchronousCommit: o.synchronousCommit ?? false,
  };
}
