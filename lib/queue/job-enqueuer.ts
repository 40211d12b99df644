import type { Type } from '@nestjs/common';
import {
  checkOptionKeys,
  checkOptions,
  databaseCall,
  describeValue,
  JobEvents,
  JobsError,
  optionShape,
  type JobHandler,
  type JobWriteRules,
  type NewJob,
  type PayloadOf,
} from '../model/index.js';
import type { EnqueueStorage } from '../storage/jobs/enqueue/enqueue-storage.interface.js';
import { defaultContext, withDefaultContext } from './job-context-capture.js';
import type { JobFactory, JobRef } from './job-factory.js';
import { checkManager } from './manager.js';
import { ENQUEUE_OPTIONS_SHAPE, WRITE_OPTIONS_SHAPE, type EnqueueOptions, type WriteOptions } from './queue-options.js';
import type { WorkflowWriter } from './workflow-writer.js';

/**
 * What an enqueue did: `created` is false when a job with the same unique
 * key already held it, and `id` is then that job's (which `replace` may
 * have updated).
 */
export interface EnqueueResult {
  /** The job's id: the new job's, or the id of the job already holding the unique key. */
  id: string;
  /** True when this call wrote a new job; false when a job holding the same unique key was found instead. */
  created: boolean;
}

/** One job of an `enqueueMany()` call: the job (class or name), its payload and its options. */
export interface EnqueueItem<H extends JobHandler = JobHandler> {
  /** The job: its `@Job` class (the payload is then type-checked) or its name. */
  job: JobRef<H>;
  /** The job's payload: plain JSON data, at most `maxPayloadBytes` once serialised. */
  payload: PayloadOf<H>;
  /** This job's options; `manager` belongs to the whole `enqueueMany()` call, and `after` is refused here. */
  options?: Omit<EnqueueOptions, 'manager' | 'after'>;
}

/**
 * Jobs per insert statement in a big enqueueMany. Chunks let PostgreSQL
 * insert one while the next is built (20k jobs of mixed shape: ~60k -> ~75k
 * jobs/s over one statement, measured); much smaller ones pay the
 * per-statement cost more often.
 */
const ENQUEUE_CHUNK = 2000;

const ENQUEUE_ITEM_SHAPE = optionShape<EnqueueItem>({ job: true, payload: true, options: ENQUEUE_OPTIONS_SHAPE });

/** JobQueue's enqueue() and enqueueMany(): their checks, the rows they build and the observers they tell. */
export class JobEnqueuer {
  constructor(
    private readonly storage: EnqueueStorage,
    private readonly factory: JobFactory,
    private readonly writer: WorkflowWriter,
    private readonly events: JobEvents,
    private readonly contextFrom: JobWriteRules['contextFrom'],
  ) {}

  async one(job: Type | string, payload: unknown, options: EnqueueOptions): Promise<EnqueueResult> {
    // Named before the job is resolved, so that even a bad options argument says which job it came with.
    const where =
      typeof job === 'string' ? `enqueue('${job}')` : typeof job === 'function' ? `enqueue(${job.name})` : 'enqueue()';
    const given = checkOptions(where, options, '{ delay: 5000 }', ENQUEUE_OPTIONS_SHAPE) ?? {};
    const manager = checkManager(where, given.manager);
    if (given.after !== undefined) return this.writer.enqueueAfter(job, payload, given);
    const now = this.factory.clock.now();
    const { manager: _manager, ...rest } = given;
    const row = this.factory.build(job, payload, rest, now, true);
    const duplicates = await databaseCall(`enqueue('${row.name}')`, () => this.storage.insertJobs([row], now, manager));
    const holder = duplicates.get(row.id);
    if (holder) return { id: holder, created: false };
    if (this.events.enqueuesObserved) this.events.enqueued({ jobs: [row], inTransaction: manager !== undefined });
    return { id: row.id, created: true };
  }

  async many(items: ReadonlyArray<EnqueueItem>, options: WriteOptions): Promise<EnqueueResult[]> {
    if (!Array.isArray(items)) {
      throw new JobsError(
        `enqueueMany(): the items must be an array, got ${describeValue(items)}. Potential fix: enqueueMany([{ job: SendReceipt, payload }]).`,
      );
    }
    const tx = checkManager(
      'enqueueMany()',
      checkOptions('enqueueMany()', options, '{ manager }', WRITE_OPTIONS_SHAPE)?.manager,
    );
    const now = this.factory.clock.now();
    const ids: string[] = [];
    // Read once for the call: items without a context of their own share it.
    const fallback = defaultContext('enqueueMany()', this.contextFrom);
    // Kept for the enqueue observers (metrics) only: a big call's rows otherwise die with their chunk.
    const written: NewJob[] | null = this.events.enqueuesObserved ? [] : null;
    const build = (from: number, to: number): NewJob[] => {
      const rows: NewJob[] = [];
      // By index, not map(): map() skips the holes of a sparse array, and a missing item must be refused.
      for (let i = from; i < Math.min(to, items.length); i++) {
        const item = items[i];
        if (!item || typeof item !== 'object' || (typeof item.job !== 'function' && typeof item.job !== 'string')) {
          throw new JobsError(
            `enqueueMany(): item ${i} has no "job" (got ${describeValue(item)}). Nothing was written. Potential fix: pass { job: HandlerClass, payload }.`,
          );
        }
        // An item's keys are checked like options: { job, payload, option: {...} } would drop its options.
        checkOptionKeys(`enqueueMany(): item ${i}`, item, ENQUEUE_ITEM_SHAPE);
        const options = withDefaultContext(item.options ?? {}, fallback);
        rows.push(this.factory.build(item.job, item.payload, options, now, true));
      }
      for (const r of rows) ids.push(r.id);
      written?.push(...rows);
      return rows;
    };
    let duplicates: Map<string, string>;
    if (items.length <= ENQUEUE_CHUNK) {
      const rows = build(0, items.length);
      duplicates = await databaseCall('enqueueMany()', () => this.storage.insertJobs(rows, now, tx));
    } else {
      // Built chunk by chunk while earlier chunks are being inserted, all in one transaction.
      const chunks = function* (): Generator<NewJob[]> {
        for (let i = 0; i < items.length; i += ENQUEUE_CHUNK) yield build(i, i + ENQUEUE_CHUNK);
      };
      duplicates = await databaseCall('enqueueMany()', () => this.storage.insertJobChunks(chunks(), now, tx));
    }
    if (written) {
      const jobs = duplicates.size ? written.filter((r) => !duplicates.has(r.id)) : written;
      this.events.enqueued({ jobs, inTransaction: tx !== undefined });
    }
    return ids.map((id) => {
      const holder = duplicates.get(id);
      return holder ? { id: holder, created: false } : { id, created: true };
    });
  }
}
