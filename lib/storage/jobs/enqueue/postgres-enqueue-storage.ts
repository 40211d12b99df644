import type { NewJob } from '../../../model/index.js';
import { executorFor, type PoolExecutor, type SqlExecutor } from '../../sql/sql-executor.js';
import type { StorageContext } from '../../sql/storage-context.js';
import type { TxScope } from '../../sql/storage-tx.interface.js';
import { dueQueues, encodeNewJobColumns, encodeUniformJobs, queueFeatures } from '../job-encoding.js';
import { preparedStatements } from '../statement-runner.js';
import { newJobParams, uniformJobParams } from '../new-job-params.js';
import type { EnqueueStorage } from './enqueue-storage.interface.js';
import { enqueueStatements, type EnqueueStatements } from './enqueue-statements.js';
import { insertUniqueJobs, uniqueHolderOf, type ChunkContext } from './unique-jobs.js';

/**
 * The plain inserts and the one-job unique insert go as named prepared
 * statements: a single-job enqueue spends ~0.3 ms on planning otherwise,
 * which is most of the enqueue-to-start latency beyond the commit.
 */
const PREPARED: ReadonlyArray<keyof EnqueueStatements> = ['insert', 'insertUniform', 'insertUniqueOne'];

/** Writes new jobs: plain, with unique keys, or into queues that newly hold groups or serial keys. */
export class PostgresEnqueueStorage implements EnqueueStorage {
  private readonly sql: EnqueueStatements;
  private readonly pool: PoolExecutor;
  private readonly channel: string;

  constructor(context: StorageContext) {
    this.pool = context.executor;
    this.channel = context.channel;
    this.sql = preparedStatements(enqueueStatements(context.schema), PREPARED);
  }

  insertJobs(jobs: readonly NewJob[], now: Date, tx?: TxScope): Promise<Map<string, string>> {
    return this.insertOn(executorFor(tx, this.pool), jobs, now);
  }

  /**
   * The plain path is one statement, and so is one job with a unique key whose holder is visible;
   * more unique keys, groups and serial keys add a few, then in one transaction.
   */
  private async insertOn(
    executor: SqlExecutor,
    jobs: readonly NewJob[],
    now: Date,
    chunk?: ChunkContext,
  ): Promise<Map<string, string>> {
    if (jobs.length === 0) return new Map();
    const features = queueFeatures(jobs);
    const unique = jobs.filter((j) => j.uniqueKey);
    const flags = features.groups.length > 0 || features.serial.length > 0;
    if (!unique.length && !flags) {
      await this.insertPlain(executor, jobs, now, chunk?.sent);
      return new Map();
    }
    // One job with a unique key needs no transaction of its own: each of its statements is atomic,
    // the rounds allow for a holder changing hands between them, and a key given up past its ttl
    // is given up for good. BEGIN and COMMIT would double the round trips of a free key's enqueue.
    if (jobs.length === 1 && !flags) {
      return insertUniqueJobs(this.sql, executor, jobs, now, this.channel, chunk);
    }
    return executor.transaction(async (tx) => {
      await this.flagQueuesOn(tx, jobs, now, features);
      const plain = unique.length ? jobs.filter((j) => !j.uniqueKey) : jobs;
      // With unique jobs to follow, the chunk's rows are sent only once theirs are.
      if (plain.length) await this.insertPlain(tx, plain, now, unique.length ? undefined : chunk?.sent);
      return unique.length ? insertUniqueJobs(this.sql, tx, unique, now, this.channel, chunk) : new Map();
    });
  }

  uniqueHolder(job: NewJob, now: Date, tx?: TxScope): Promise<string | null> {
    return uniqueHolderOf(this.sql, executorFor(tx, this.pool), job, now);
  }

  /** `sent` is told once the statement is on its way (see insertJobChunks). */
  private async insertPlain(
    executor: SqlExecutor,
    jobs: readonly NewJob[],
    now: Date,
    sent?: () => void,
  ): Promise<void> {
    const due = dueQueues(jobs, now);
    const uniform = encodeUniformJobs(jobs);
    const inserting = uniform
      ? this.sql.insertUniform.run(executor, { ...uniformJobParams(uniform), now, channel: this.channel, due })
      : this.sql.insert.run(executor, { ...newJobParams(encodeNewJobColumns(jobs)), now, channel: this.channel, due });
    sent?.();
    await inserting;
  }

  /**
   * Marks the queues that now hold grouped or serial jobs (see flagQueues
   * in enqueue-statements.ts); a no-op for jobs without either. Workflow
   * inserts call it too, in their own transaction.
   */
  async flagQueuesOn(
    executor: SqlExecutor,
    jobs: readonly NewJob[],
    now: Date,
    features = queueFeatures(jobs),
  ): Promise<void> {
    if (!features.groups.length && !features.serial.length) return;
    const queues = [...new Set([...features.groups, ...features.serial])];
    await this.sql.flagQueues.run(executor, {
      queues,
      groups: queues.map((q) => features.groups.includes(q)),
      serial: queues.map((q) => features.serial.includes(q)),
      now,
      channel: this.channel,
    });
  }

  async insertJobChunks(chunks: Iterable<readonly NewJob[]>, now: Date, tx?: TxScope): Promise<Map<string, string>> {
    const duplicates = new Map<string, string>();
    // Unique keys the call's earlier chunks settled, for its later ones.
    const settled = new Map<string, string>();
    await executorFor(tx, this.pool).transaction(async (conn) => {
      // The next chunk is pulled from the iterator (built) while the last one
      // is being inserted, so this process and PostgreSQL work at once rather
      // than by turns: it is built once the chunk's rows are sent (a unique or
      // flagged chunk sends a statement or two before them, whose answers are
      // heard only between chunks otherwise). One statement at a time on the
      // connection: pg 8 deprecates queueing queries on a busy client. The
      // iterator may throw (a job that fails its checks): the transaction then
      // rolls back.
      let inFlight: Promise<void> | null = null;
      const collect = (found: Map<string, string>) => {
        for (const [id, holder] of found) duplicates.set(id, holder);
      };
      try {
        for (const chunk of chunks) {
          if (inFlight) await inFlight;
          let sent!: () => void;
          const rowsSent = new Promise<void>((resolve) => (sent = resolve));
          inFlight = this.insertOn(conn, chunk, now, { settled, sent }).then(collect);
          await Promise.race([rowsSent, inFlight]);
        }
        await inFlight;
      } catch (error) {
        await inFlight?.catch(() => undefined);
        throw error;
      }
    });
    return duplicates;
  }
}
