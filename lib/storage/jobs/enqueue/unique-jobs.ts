import { StorageFailure, type NewJob } from '../../../model/index.js';
import { underSavepoint, UNDONE, type SqlExecutor } from '../../sql/sql-executor.js';
import { dueQueues, encodeNewJobColumns, encodeNewJobValues, encodeUniformJobs } from '../job-encoding.js';
import { newJobParams, uniformJobParams } from '../new-job-params.js';
import type { EnqueueStatements, InsertJobsParams, InsertUniformParams } from './enqueue-statements.js';

type Row = Record<string, unknown>;

/**
 * What one chunk of a many-chunk call shares with the others: the keys its
 * transaction already settled (written, or found held), by holdKey, so a
 * later job with one of them is answered here (its insert would only
 * conflict, and a conflict costs PostgreSQL about what an insert does, plus
 * the look-up of the holder); and `sent`, called once the chunk's rows are on
 * their way to PostgreSQL, when the next chunk may be built.
 */
export interface ChunkContext {
  readonly settled: Map<string, string>;
  readonly sent?: () => void;
}

/** A holder can finish between our failed insert and the look-up; past this many rounds something is wrong. */
const MAX_ROUNDS = 5;

/**
 * Writes jobs with unique keys and says which were duplicates: the map
 * takes each new job that was not written to the job that holds its key.
 * The unique indexes decide (an insert that finds its key held is a no-op),
 * so concurrent enqueues on any instance agree without a lock held across
 * calls. A key whose holder finished in between is simply tried again.
 */
export async function insertUniqueJobs(
  sql: EnqueueStatements,
  executor: SqlExecutor,
  jobs: readonly NewJob[],
  now: Date,
  channel: string,
  chunk: ChunkContext = { settled: new Map() },
): Promise<Map<string, string>> {
  const { settled } = chunk;
  const duplicates = new Map<string, string>();
  // Each job's key is built once: for 20k jobs the strings and their hashing were ~7% of the call.
  let pending: NewJob[] = [];
  let pendingKeys: string[] = [];
  /** Later jobs of this chunk with a key an earlier one has: they share its answer. */
  const echoes: NewJob[] = [];
  const echoKeys: string[] = [];
  const firsts = new Set<string>();
  for (const job of jobs) {
    if (job.uniqueReplace) continue;
    const key = holdKey(job);
    const holder = settled.get(key);
    if (holder !== undefined) duplicates.set(job.id, holder);
    else if (firsts.has(key)) {
      echoes.push(job);
      echoKeys.push(key);
    } else {
      firsts.add(key);
      pending.push(job);
      pendingKeys.push(key);
    }
  }
  for (let round = 0; pending.length; round++) {
    if (round === MAX_ROUNDS)
      throw keysChangingHands(`${pending.length} job(s) of ${jobNames(pending)} with unique keys`);
    const { written, holder } = await insertRound(sql, executor, pending, now, channel, chunk.sent);
    const skipped: NewJob[] = [];
    const skippedKeys: string[] = [];
    pending.forEach((job, i) => {
      if (written.has(job.id)) settled.set(pendingKeys[i]!, job.id);
      else if (holder) {
        duplicates.set(job.id, holder);
        settled.set(pendingKeys[i]!, holder);
      } else {
        skipped.push(job);
        skippedKeys.push(pendingKeys[i]!);
      }
    });
    pending = [];
    pendingKeys = [];
    if (!skipped.length) break;
    const holders = await holdersOf(sql, executor, skipped, now);
    skipped.forEach((job, i) => {
      const key = skippedKeys[i]!;
      const holder = holders.get(key);
      if (!holder) {
        pending.push(job);
        pendingKeys.push(key);
        return;
      }
      duplicates.set(job.id, holder);
      settled.set(key, holder);
    });
  }
  chunk.sent?.();
  echoes.forEach((job, i) => duplicates.set(job.id, settled.get(echoKeys[i]!)!));
  // A debounce writes one job at a time: it may have to update the holder instead.
  for (const job of jobs.filter((j) => j.uniqueReplace)) {
    const holder = await replaceOne(sql, executor, job, now, channel);
    if (holder !== job.id) duplicates.set(job.id, holder);
  }
  return duplicates;
}

/**
 * One insert of `jobs`: the ids written, and for a single job the holder of its key when the
 * statement could see it (see insertUniqueOne); the other jobs' holders are looked up after.
 */
async function insertRound(
  sql: EnqueueStatements,
  executor: SqlExecutor,
  jobs: readonly NewJob[],
  now: Date,
  channel: string,
  sent?: () => void,
): Promise<{ written: Set<string>; holder?: string }> {
  const written = new Set<string>();
  const due = dueQueues(jobs, now);
  if (jobs.length === 1) {
    const job = jobs[0]!;
    const inserting = sql.insertUniqueOne.run(executor, {
      ...newJobParams(encodeNewJobValues(job)),
      now,
      channel,
      due,
      ttl: job.uniqueTtl ?? null,
    });
    sent?.();
    const rows = await inserting;
    let holder: string | undefined;
    for (const r of rows) {
      if (r.written === true) written.add(r.id as string);
      else if (r.written === false) holder = r.id as string;
    }
    return { written, holder };
  }
  const uniform = encodeUniformJobs(jobs, true);
  const rows = await insertFreshFirst(
    sql,
    executor,
    uniform
      ? { form: 'Uniform', params: { ...uniformJobParams(uniform), now, channel, due } }
      : { form: '', params: { ...newJobParams(encodeNewJobColumns(jobs)), now, channel, due } },
    sent,
  );
  if (rows[0]?.written === jobs.length) {
    for (const job of jobs) written.add(job.id);
    return { written };
  }
  const found = await sql.writtenOf.run(executor, { ids: jobs.map((j) => j.id) });
  for (const r of found) written.add(r.id as string);
  return { written };
}

/** The savepoint insertFreshFirst rolls back to; one at a time, as the transaction's statements run. */
const FRESH = 'durable_jobs_fresh_keys';

/**
 * insertFresh, and where another transaction took one of its keys meanwhile (a unique violation),
 * the same rows by insertUnique instead. Only in a transaction: every call of more than one job is.
 */
async function insertFreshFirst(
  sql: EnqueueStatements,
  executor: SqlExecutor,
  insert: { form: ''; params: InsertJobsParams } | { form: 'Uniform'; params: InsertUniformParams },
  sent?: () => void,
): Promise<Row[]> {
  const run = (fresh: boolean): Promise<Row[]> =>
    insert.form === 'Uniform'
      ? (fresh ? sql.insertFreshUniform : sql.insertUniqueUniform).run(executor, insert.params)
      : (fresh ? sql.insertFresh : sql.insertUnique).run(executor, insert.params);
  const rows = await underSavepoint(
    executor,
    FRESH,
    () => {
      const inserting = run(true);
      sent?.();
      return inserting;
    },
    (error) => (error as { code?: string })?.code === '23505',
  );
  return rows === UNDONE ? run(false) : rows;
}

async function replaceOne(
  sql: EnqueueStatements,
  executor: SqlExecutor,
  job: NewJob,
  now: Date,
  channel: string,
): Promise<string> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const inserted = await insertRound(sql, executor, [job], now, channel);
    if (inserted.written.has(job.id)) return job.id;
    const holder = inserted.holder ?? (await holdersOf(sql, executor, [job], now)).get(holdKey(job));
    if (!holder) continue;
    // The holder takes this payload, run time and context unless it already runs (then it stays as it is).
    await sql.replaceUnique.run(executor, {
      holder,
      key: job.uniqueKey,
      channel,
      payload: job.payloadJson,
      runAt: job.runAt,
      now,
      context: job.contextJson ?? null,
    });
    return holder;
  }
  throw keysChangingHands(`job "${job.name}" with the unique key "${job.uniqueKey}"`);
}

function jobNames(jobs: readonly NewJob[]): string {
  return [...new Set(jobs.map((j) => `"${j.name}"`))].join(', ');
}

/** Holders that finish between each insert and its look-up, round after round: retryable, like a lost race. */
function keysChangingHands(what: string): StorageFailure {
  return new StorageFailure(
    `${what} not written: the keys kept changing hands (held, then released, ${MAX_ROUNDS} rounds in a row); ` +
      'enqueue them again',
  );
}

/** The holders of the jobs' keys; one past a job's `uniqueTtl` gives its key up instead (see uniqueHolders). */
async function holdersOf(
  sql: EnqueueStatements,
  executor: SqlExecutor,
  jobs: readonly NewJob[],
  now: Date,
): Promise<Map<string, string>> {
  const rows = await sql.uniqueHolders.run(executor, {
    keys: jobs.map((j) => j.uniqueKey),
    whiles: jobs.map((j) => j.uniqueWhile ?? null),
    windows: jobs.map((j) => j.uniqueWindow ?? null),
    ttls: jobs.map((j) => j.uniqueTtl ?? null),
    now,
  });
  return new Map(
    rows.map((r) => [
      holdKey({
        uniqueKey: r.unique_key as string,
        uniqueWhile: r.unique_while as NewJob['uniqueWhile'],
        uniqueWindow: r.unique_window === null ? null : Number(r.unique_window),
      }),
      r.id as string,
    ]),
  );
}

/** The job that holds `job`'s unique key (as `job` would hold it), or null while the key is free. */
export async function uniqueHolderOf(
  sql: EnqueueStatements,
  executor: SqlExecutor,
  job: NewJob,
  now: Date,
): Promise<string | null> {
  return (await holdersOf(sql, executor, [job], now)).get(holdKey(job)) ?? null;
}

/** A key and the way it is held: two ways of holding one key are two keys. */
function holdKey(j: Pick<NewJob, 'uniqueKey' | 'uniqueWhile' | 'uniqueWindow'>): string {
  return j.uniqueWindow != null ? `${j.uniqueKey}\u0000w${j.uniqueWindow}` : `${j.uniqueKey}\u0000${j.uniqueWhile}`;
}
