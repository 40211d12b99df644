// graphile-worker 0.18, tuned per its performance docs: a 500-job local queue
// and completion/failure batching with no added delay.
import { Logger, makeWorkerUtils, run, runMigrations } from 'graphile-worker';
import { DATABASE_URL, analyzeSchema, dropSchema, sql } from '../common.mjs';

const SCHEMA = 'graphile_worker';
const TASK = 'noop';

// Warnings and errors only: info logging of every job start would cost time
// the other libraries do not pay.
const logger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(`[graphile-worker] ${message}`);
});

export const settings = (c) => ({
  concurrentJobs: c,
  maxPoolSize: c + 2,
  localQueue: { size: 500 },
  completeJobBatchDelay: 0,
  failJobBatchDelay: 0,
  logger: 'warnings and errors',
});

// Through a transaction pooler (the PgBouncer scenarios): no prepared statements, its option for
// poolers. Its LISTEN runs on a client of its one pool, and no option gives it another connection:
// through the pooler that LISTEN is accepted and delivers nothing, so it polls, every 500 ms as the
// other libraries' idle polls do here (its default pollInterval is 2 s).
const POOLED_POLL_MS = 500;

export function create() {
  let utils = null;
  let runner = null;
  let keptUpTo = 0;

  const producer = async () => {
    utils ??= await makeWorkerUtils({ connectionString: DATABASE_URL, logger });
    return utils;
  };

  return {
    name: 'graphile',
    label: 'graphile-worker 0.18',
    storage: 'postgres',
    pooler: {
      note:
        `noPreparedStatements: true; its LISTEN goes through its pool, where it delivers nothing, and it takes ` +
        `no other connection for it: polls (pollInterval ${POOLED_POLL_MS} ms)`,
    },

    async open() {
      await producer();
    },

    async reset() {
      await this.close();
      keptUpTo = 0;
      await dropSchema(SCHEMA);
      await runMigrations({ connectionString: DATABASE_URL, logger });
    },

    async cleanup() {
      await this.close();
      await dropSchema(SCHEMA);
    },

    async enqueueBulk(n, offset = 0) {
      const u = await producer();
      const specs = new Array(n);
      for (let k = 0; k < n; k++) specs[k] = { identifier: TASK, payload: { i: offset + k } };
      await u.addJobs(specs);
    },

    // Named queues: graphile-worker runs a queue's jobs one at a time, in order (serial keys).
    flow: ['serial'],
    async enqueueFlow(n, kind, keys) {
      const u = await producer();
      const specs = new Array(n);
      for (let k = 0; k < n; k++) specs[k] = { identifier: TASK, payload: { i: k }, queueName: `k-${k % keys}` };
      await u.addJobs(specs);
    },

    async enqueueOne(i) {
      const u = await producer();
      await u.addJob(TASK, { i });
    },

    // jobKeyMode 'unsafe_dedupe' keeps the first job of a key as it is (the default, 'replace',
    // overwrites its payload and run time: a debounce). It holds the key for as long as the job
    // exists, a running one and one failed for good included.
    async enqueueUnique(i, key) {
      const u = await producer();
      await u.addJob(TASK, { i }, { jobKey: key, jobKeyMode: 'unsafe_dedupe' });
    },

    async jobCount() {
      return (await sql(`SELECT count(*)::int AS n FROM ${SCHEMA}._private_jobs`)).rows[0].n;
    },

    // graphile-worker deletes a job when it succeeds, so its table never holds
    // finished successes. The rows it does keep are jobs that failed for good
    // (attempts = max_attempts); those are the "finished but kept" rows here.
    async prefillFinished(n) {
      await producer();
      await sql(`INSERT INTO ${SCHEMA}._private_tasks (identifier) VALUES ($1) ON CONFLICT DO NOTHING`, [TASK]);
      await sql(
        `INSERT INTO ${SCHEMA}._private_jobs
           (task_id, payload, run_at, attempts, max_attempts, last_error, created_at, updated_at)
         SELECT t.id, json_build_object('i', -g), now(), 25, 25, 'failed for good', now(), now()
           FROM generate_series(1, $1::int) g, ${SCHEMA}._private_tasks t
          WHERE t.identifier = $2`,
        [n, TASK],
      );
      keptUpTo = (await sql(`SELECT coalesce(max(id), 0)::bigint AS m FROM ${SCHEMA}._private_jobs`)).rows[0].m;
    },

    analyze: () => analyzeSchema(SCHEMA),

    // Succeeded jobs are deleted, so what is left above the pre-fill's last id
    // is unfinished. The id range keeps this an index scan with 1M kept rows.
    async pendingCount() {
      const { rows } = await sql(
        `SELECT count(*)::int AS n FROM ${SCHEMA}._private_jobs WHERE id > $1 AND attempts < max_attempts`,
        [keptUpTo],
      );
      return rows[0].n;
    },

    // `pooled`: through a transaction pooler at pooled.url. Its schema is migrated by reset(), direct;
    // at start it only reads the migrations table.
    async startWorker({ concurrency, onJob, pooled }) {
      runner = await run({
        connectionString: pooled ? pooled.url : DATABASE_URL,
        ...(pooled ? { noPreparedStatements: true, pollInterval: POOLED_POLL_MS } : {}),
        logger,
        noHandleSignals: true,
        taskList: { [TASK]: async (payload) => onJob(payload) },
        preset: {
          worker: {
            concurrentJobs: concurrency,
            maxPoolSize: concurrency + 2,
            localQueue: { size: 500 },
            completeJobBatchDelay: 0,
            failJobBatchDelay: 0,
          },
        },
      });
    },

    async close() {
      if (runner) {
        const r = runner;
        runner = null;
        await r.stop();
      }
      if (utils) {
        const u = utils;
        utils = null;
        await u.release();
      }
    },
  };
}
