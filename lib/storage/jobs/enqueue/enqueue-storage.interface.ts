import type { NewJob } from '../../../model/index.js';
import type { TxScope } from '../../sql/storage-tx.interface.js';

/**
 * How jobs are written. `tx` is a transaction a write joins: the caller's
 * TypeORM EntityManager, or one storage opened.
 */
export interface EnqueueStorage {
  /**
   * All of `jobs` are written or none. Returns the duplicates: each job not
   * written because its unique key is held, mapped to the holder's id.
   */
  insertJobs(jobs: readonly NewJob[], now: Date, tx?: TxScope): Promise<Map<string, string>>;
  /**
   * The job holding `job`'s unique key (as `job` would hold it), read in
   * `tx`, or null while the key is free.
   */
  uniqueHolder(job: NewJob, now: Date, tx?: TxScope): Promise<string | null>;
  /** One transaction, a statement or a few per chunk; chunks are pulled from the iterator as the previous one is sent. */
  insertJobChunks(chunks: Iterable<readonly NewJob[]>, now: Date, tx?: TxScope): Promise<Map<string, string>>;
}

/** Injection token of the EnqueueStorage. */
export const ENQUEUE_STORAGE = Symbol('ENQUEUE_STORAGE');
