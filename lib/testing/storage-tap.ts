import type { EntityManager } from 'typeorm';
import type { CancelResult, JobControlStorage } from '../storage/jobs/control/job-control-storage.interface.js';
import type { EnqueueStorage } from '../storage/jobs/enqueue/enqueue-storage.interface.js';
import type { TxScope } from '../storage/sql/storage-tx.interface.js';
import type { WorkflowStorage } from '../storage/workflows/workflow-storage.interface.js';

/** What the testing kit does when the app writes through storage (set by the JobDrainer). */
export interface TapListener {
  /**
   * A write that may have made jobs due returned. `scope` is where it was
   * written: nothing (committed already), the caller's EntityManager (maybe
   * in an open transaction), or a transaction of storage's own (whose
   * `transaction()` call reports again when it commits).
   */
  written(scope: TxScope | undefined): Promise<void>;
  /** Running jobs were asked to stop: one job, or the members of a batch. */
  cancelRequested(target: { job: string } | { batch: string }): void;
}

/**
 * The testing kit's view of the app's writes. JobsTestingModule puts this
 * between the storage and everything that uses it; the listener is the
 * drainer, in modes that run jobs through it.
 */
export class StorageTap {
  listener: TapListener | null = null;

  written(scope: TxScope | undefined): Promise<void> {
    return this.listener?.written(scope) ?? Promise.resolve();
  }

  cancelRequested(target: { job: string } | { batch: string }): void {
    this.listener?.cancelRequested(target);
  }
}

/**
 * Every call that can make a job due from the app's side (an enqueue of any
 * kind, a retry, a cancel that releases dependents) and where its
 * transaction is among its arguments. Writes made while a job runs
 * (continuations, batch additions, outcomes) are the drain's own and need
 * no report: its loop claims whatever they made due.
 */
const ENQUEUE_WRITES: Record<string, (args: unknown[]) => TxScope | undefined> = {
  insertJobs: (args) => args[2] as TxScope | undefined,
  insertJobChunks: (args) => args[2] as TxScope | undefined,
};

const CONTROL_WRITES: Record<string, (args: unknown[]) => TxScope | undefined> = {
  retry: () => undefined,
  cancel: () => undefined,
};

const WORKFLOW_WRITES: Record<string, (args: unknown[]) => TxScope | undefined> = {
  insertGraph: (args) => args[2] as TxScope | undefined,
  transaction: (args) => args[1] as EntityManager | undefined,
  cancelBatch: () => undefined,
};

/** Nest would call these on the wrapper as well as on the storage itself. */
const LIFECYCLE_HOOKS = new Set([
  'onModuleInit',
  'onApplicationBootstrap',
  'onModuleDestroy',
  'beforeApplicationShutdown',
  'onApplicationShutdown',
]);

/** The enqueue storage, reporting each enqueue to the tap. */
export function tapEnqueueStorage(storage: EnqueueStorage, tap: StorageTap): EnqueueStorage {
  return tapped(storage, ENQUEUE_WRITES, (method, args) => tap.written(ENQUEUE_WRITES[method]!(args)));
}

/** The job control storage, reporting retries and cancels (and cancels of running jobs) to the tap. */
export function tapControlStorage(storage: JobControlStorage, tap: StorageTap): JobControlStorage {
  return tapped(storage, CONTROL_WRITES, async (method, args, result) => {
    if (method === 'cancel' && (result as CancelResult).outcome === 'requested') {
      tap.cancelRequested({ job: args[0] as string });
    }
    await tap.written(CONTROL_WRITES[method]!(args));
  });
}

export function tapWorkflowStorage(storage: WorkflowStorage, tap: StorageTap): WorkflowStorage {
  return tapped(storage, WORKFLOW_WRITES, async (method, args, result) => {
    if (method === 'cancelBatch' && result === 'cancelled') tap.cancelRequested({ batch: args[0] as string });
    await tap.written(WORKFLOW_WRITES[method]!(args));
  });
}

function tapped<T extends object>(
  target: T,
  writes: Record<string, unknown>,
  after: (method: string, args: unknown[], result: unknown) => Promise<void>,
): T {
  return new Proxy(target, {
    get(t, property) {
      if (typeof property === 'string' && LIFECYCLE_HOOKS.has(property)) return undefined;
      const value: unknown = Reflect.get(t, property, t);
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(t);
      if (typeof property !== 'string' || !Object.hasOwn(writes, property)) return method;
      return async (...args: unknown[]) => {
        const result = await method(...args);
        await after(property, args, result);
        return result;
      };
    },
  });
}
