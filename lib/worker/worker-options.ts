import { checkInteger, checkName, describeValue, INT4_MAX, JobsError } from '../model/index.js';

/** One queue this instance serves, in the object form of `worker.queues`. */
export interface WorkerQueueOptions {
  /**
   * The most jobs of this queue this instance holds at once, running or
   * claimed ahead and waiting to start here; at most `worker.concurrency`.
   * Left out: no cap of the instance's own (the queue still shares the
   * worker's slots, and any limit of `JobsModule`'s `queues`, which counts
   * every instance's jobs together). Each instance applies its own: two
   * instances capped at 2 run up to 4 at once.
   */
  concurrency?: number;
}

/** The worker of this instance: whether it runs, what it serves, and how it claims, leases and shuts down. */
export interface WorkerOptions {
  /** false for API-only instances that enqueue but never run jobs. */
  enabled?: boolean;
  /** Jobs run at once by this instance; default 10. */
  concurrency?: number;
  /**
   * Queues to serve; default every queue. An array is a priority order. An
   * object serves its keys, in the same priority order (the object's key
   * order), each with this instance's own options:
   * `{ video: { concurrency: 2 }, mail: {} }` serves `video` and `mail`
   * only, and never runs more than 2 `video` jobs at once here. Either form
   * serves the queues it lists and no other; an empty one serves every queue.
   */
  queues?: string[] | Record<string, WorkerQueueOptions>;
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
   * is not hoarded by one instance. Prefetched jobs keep their lease. A
   * queue capped in `queues` is never claimed ahead beyond its cap.
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
  /** The queues served, in priority order; null: every queue. */
  queues: string[] | null;
  /** Per capped queue, the most of its jobs this instance holds at once (`worker.queues.<name>.concurrency`). */
  queueSlots: ReadonlyMap<string, number>;
  /** null: adaptive. */
  prefetch: number | null;
};

export const WORKER_OPTIONS = Symbol('WORKER_OPTIONS');

const WHERE = 'JobsModule';

export function resolveWorkerOptions(o: WorkerOptions = {}): ResolvedWorkerOptions {
  const concurrency = o.concurrency ?? 10;
  const { queues, queueSlots } = resolveServedQueues(o.queues, concurrency);
  return {
    enabled: o.enabled ?? true,
    concurrency,
    queues,
    queueSlots,
    pollInterval: o.pollInterval ?? 1000,
    lease: o.lease ?? 30_000,
    shutdownGrace: o.shutdownGrace ?? 10_000,
    prefetch: o.prefetch ?? null,
    progressThrottle: o.progressThrottle ?? 500,
    synchronousCommit: o.synchronousCommit ?? false,
  };
}

/**
 * `worker.queues` in either form, as the served queues in their order and the
 * caps among them. The keys of each entry are checked with the module's
 * options (jobs-options.keys.ts); what they hold is checked here.
 */
function resolveServedQueues(
  given: unknown,
  concurrency: number,
): { queues: string[] | null; queueSlots: Map<string, number> } {
  const queueSlots = new Map<string, number>();
  if (given === undefined) return { queues: null, queueSlots };
  if (Array.isArray(given)) {
    const queues = given.map((q, i) => checkName(WHERE, `worker.queues[${i}]`, q, 'emails'));
    return { queues: queues.length ? queues : null, queueSlots };
  }
  if (given === null || typeof given !== 'object') {
    throw new JobsError(
      `${WHERE}: "worker.queues" must be an array of queue names (a priority order) or an object of queues and their options, got ${describeValue(given)}. ` +
        `Potential fix: worker.queues: ['video', 'mail'], or worker.queues: { video: { concurrency: 2 }, mail: {} }.`,
    );
  }
  const queues: string[] = [];
  for (const [queue, entry] of Object.entries(given as Record<string, unknown>)) {
    const field = `worker.queues.${queue}`;
    checkName(WHERE, 'worker.queues key', queue, 'video');
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new JobsError(
        `${WHERE}: "${field}" must be an object of the queue's options on this instance, got ${describeValue(entry)}. ` +
          `Potential fix: ${field}: { concurrency: 2 } to run at most 2 of its jobs at once here, or ${field}: {} to serve it with no cap of its own.`,
      );
    }
    queues.push(queue);
    const cap = (entry as WorkerQueueOptions).concurrency;
    if (cap === undefined) continue;
    checkInteger(WHERE, `${field}.concurrency`, cap, 1, INT4_MAX, concurrency === 1 ? 1 : 2);
    if (typeof concurrency === 'number' && cap > concurrency) {
      throw new JobsError(
        `${WHERE}: "${field}.concurrency" is ${cap}, more than the ${concurrency} jobs this instance runs at once ("worker.concurrency"): it could never be reached. ` +
          `Potential fix: ${field}.concurrency: ${concurrency} or less, or raise worker.concurrency to ${cap}.`,
      );
    }
    queueSlots.set(queue, cap);
  }
  return { queues: queues.length ? queues : null, queueSlots };
}
