import {
  checkId,
  checkInteger,
  checkOptions,
  databaseCall,
  describeValue,
  INT4_MAX,
  JOB_STATES,
  JobsError,
  MAX_EXECUTIONS_PAGE,
  optionShape,
  parseExecutionCursor,
  type BatchInfo,
  type ExecutionPageOptions,
  type JobExecutionPage,
  type JobInfo,
  type JobState,
} from '../model/index.js';
import type { JobControlStorage } from '../storage/jobs/control/job-control-storage.interface.js';
import type { BatchGraph, BatchMember, WorkflowStorage } from '../storage/workflows/workflow-storage.interface.js';
import { EXECUTION_PAGE_SHAPE, GET_JOB_SHAPE, type GetJobOptions } from './queue-options.js';

/** What `batchMembers()` takes. */
export interface BatchMembersOptions {
  state?: JobState;
  skip?: number;
  take?: number;
}

const BATCH_MEMBERS_SHAPE = optionShape<BatchMembersOptions>({ state: true, skip: true, take: true });

/**
 * Reads of one job or batch by id, with their checks and messages: JobQueue's
 * on the primary, and JobsAdmin's on whatever its reads go to (the
 * monitoring replica when one is configured). `prefix` names the caller in
 * messages (`JobsAdmin.`), empty for JobQueue's own.
 */
export class JobReads {
  constructor(
    private readonly jobs: Pick<JobControlStorage, 'getJob' | 'executions'>,
    private readonly batches: Pick<WorkflowStorage, 'batchStatus' | 'batchMembers' | 'batchGraph'>,
    private readonly prefix = '',
  ) {}

  async get(id: string, options: GetJobOptions = {}): Promise<JobInfo | null> {
    const jobId = checkId(`${this.prefix}get()`, id);
    const where = `${this.prefix}get(${jobId})`;
    const o = checkOptions(where, options, '{ stepResults: true }', GET_JOB_SHAPE) ?? {};
    if (o.stepResults !== undefined && typeof o.stepResults !== 'boolean') {
      throw new JobsError(
        `${where}: "stepResults" must be a boolean, got ${describeValue(o.stepResults)}. Potential fix: get(id, { stepResults: true }).`,
      );
    }
    return databaseCall(where, () => this.jobs.getJob(jobId, { stepResults: o.stepResults === true }));
  }

  async executions(id: string, options: ExecutionPageOptions = {}): Promise<JobExecutionPage | null> {
    const jobId = checkId(`${this.prefix}executions()`, id);
    const where = `${this.prefix}executions(${jobId})`;
    const o = checkOptions(where, options, '{ after: page.next, limit: 50 }', EXECUTION_PAGE_SHAPE) ?? {};
    const after = o.after === undefined ? null : parseExecutionCursor(where, o.after);
    const limit = checkInteger(where, 'limit', o.limit ?? 50, 1, MAX_EXECUTIONS_PAGE, 50);
    return databaseCall(where, () => this.jobs.executions(jobId, after, limit));
  }

  async batchStatus(id: string): Promise<BatchInfo | null> {
    const batchId = checkId(`${this.prefix}batchStatus()`, id, 'batch');
    return databaseCall(`${this.prefix}batchStatus(${batchId})`, () => this.batches.batchStatus(batchId));
  }

  async batchMembers(id: string, options: BatchMembersOptions = {}): Promise<BatchMember[]> {
    const batchId = checkId(`${this.prefix}batchMembers()`, id, 'batch');
    const where = `${this.prefix}batchMembers(${batchId})`;
    const o = checkOptions(where, options, '{ skip: 0, take: 100 }', BATCH_MEMBERS_SHAPE) ?? {};
    const take = o.take === undefined ? 100 : checkInteger(where, 'take', o.take, 1, 10_000, 100);
    const skip = o.skip === undefined ? 0 : checkInteger(where, 'skip', o.skip, 0, INT4_MAX, 0);
    if (o.state !== undefined && !(JOB_STATES as readonly unknown[]).includes(o.state)) {
      throw new JobsError(
        `${where}: "state" must be one of ${JOB_STATES.join(', ')}, got ${describeValue(o.state)}. Potential fix: { state: 'failed' }.`,
      );
    }
    return databaseCall(where, () => this.batches.batchMembers(batchId, { state: o.state, skip, take }));
  }

  async batchGraph(id: string): Promise<BatchGraph | null> {
    const batchId = checkId(`${this.prefix}batchGraph()`, id, 'batch');
    return databaseCall(`${this.prefix}batchGraph(${batchId})`, () => this.batches.batchGraph(batchId));
  }
}
