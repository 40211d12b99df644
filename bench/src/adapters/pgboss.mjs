// pg-boss 12: one fetch loop (localConcurrency 1) pulling batchSize = C jobs,
// fetching again at once while batches come back full, woken by LISTEN/NOTIFY
// when idle, polling every 0.5 s as the backstop.
import { PgBoss } from 'pg-boss';
import { DATABASE_URL, analyzeSchema, dropSchema, sql } from '../common.mjs';

const SCHEMA = 'pgboss';
const QUEUE = 'noop';
// singletonKey only takes effect through a queue policy: 'exclusive' allows one job per key that
// is created, retrying or active, as this library's default unique key is held.
const UNIQUE_QUEUE = 'noop-unique';

export const settings = (c) => ({
  batchSize: c,
  localConcurrency: 1,
  burstWhenBatchFull: true,
  useListenNotify: true,
  'queue notify': true,
  pollingIntervalSeconds: 0.5,
  notifyPollingIntervalSeconds: 0.5,
});

function boss(extra) {
  const b = new PgBoss({ connectionString: DATABASE_URL, schema: SCHEMA, ...extra });
  b.on('error', (e) => console.error(`[pg-boss] ${e.message}`));
  return b;
}

export function create() {
  let producer = null;
  let worker = null;

  // The producer neither supervises nor schedules: that is the worker's job,
  // and two maintenance loops would only add load to the measured process.
  const client = async () => {
    if (!producer) {
      producer = boss({ supervise: false, schedule: false });
      await producer.start();
    }
    return producer;
  };

  return {
    name: 'pgboss',
    label: 'pg-boss 12',
    storage: 'postgres',
    pooler: {
      note: 'as direct (no option needed); useListenNotify off, as its docs say LISTEN does not work there: polls every 0.5 s',
    },

    async open() {
      await client();
    },

    async reset() {
      await this.close();
      await dropSchema(SCHEMA);
      const b = await client();
      await b.createQueue(QUEUE, { notify: true });
      await b.createQueue(UNIQUE_QUEUE, { policy: 'exclusive' });
    },

    async cleanup() {
      await this.close();
      await dropSchema(SCHEMA);
    },

    async enqueueBulk(n, offset = 0) {
      const b = await client();
      const jobs = new Array(n);
      for (let k = 0; k < n; k++) jobs[k] = { data: { i: offset + k } };
      await b.insert(QUEUE, jobs);
    },

    // Serial keys: a group per key, and the workers fetch with groupConcurrency 1 (counted in the
    // database, across processes).
    flow: ['serial'],
    async enqueueFlow(n, kind, keys) {
      const b = await client();
      const jobs = new Array(n);
      for (let k = 0; k < n; k++) jobs[k] = { data: { i: k }, group: { id: `k-${k % keys}` } };
      await b.insert(QUEUE, jobs);
    },

    async enqueueOne(i) {
      const b = await client();
      await b.send(QUEUE, { i });
    },

    async enqueueUnique(i, key) {
      const b = await client();
      await b.send(UNIQUE_QUEUE, { i }, { singletonKey: key });
    },

    async jobCount() {
      return (await sql(`SELECT count(*)::int AS n FROM ${SCHEMA}.job`)).rows[0].n;
    },

    // Completed jobs stay in pg-boss's job table until their retention ends,
    // so these rows look like the ones its own completion leaves behind.
    async prefillFinished(n) {
      await client();
      await sql(
        `INSERT INTO ${SCHEMA}.job (name, data, state, policy, retry_limit, retry_delay,
                                   expire_seconds, deletion_seconds,
                                   start_after, created_on, started_on, completed_on, keep_until)
         SELECT q.name, jsonb_build_object('i', -g), 'completed', q.policy, q.retry_limit, q.retry_delay,
                q.expire_seconds, q.deletion_seconds,
                now(), now(), now(), now(), now() + q.retention_seconds * interval '1 second'
           FROM generate_series(1, $1::int) g, ${SCHEMA}.queue q
          WHERE q.name = $2`,
        [n, QUEUE],
      );
    },

    analyze: () => analyzeSchema(SCHEMA),

    // Written to match pg-boss's partial index on unfinished states, so the
    // check stays cheap with a million completed rows beside it.
    async pendingCount() {
      const { rows } = await sql(
        `SELECT count(*)::int AS n FROM ${SCHEMA}.job
          WHERE name = $1 AND state IN ('created', 'retry', 'active')`,
        [QUEUE],
      );
      return rows[0].n;
    },

    // `pooled`: through a transaction pooler at pooled.url. pg-boss needs nothing else there: its
    // statements are unnamed, its advisory locks transaction-scoped (pg_advisory_xact_lock), its
    // settings SET LOCAL. Its LISTEN connection would go through the pooler too, where LISTEN is
    // accepted and delivers nothing (its docs: useListenNotify "will not work through PgBouncer in
    // transaction pooling mode"), so it is off there and the worker polls every 0.5 s.
    async startWorker({ concurrency, onJob, flow, pooled }) {
      worker = boss(pooled ? { connectionString: pooled.url, useListenNotify: false } : { useListenNotify: true });
      await worker.start();
      await worker.work(
        QUEUE,
        {
          batchSize: concurrency,
          localConcurrency: 1,
          burstWhenBatchFull: true,
          pollingIntervalSeconds: 0.5,
          notifyPollingIntervalSeconds: 0.5,
          ...(flow === 'serial' ? { groupConcurrency: 1 } : {}),
        },
        async (jobs) => {
          await Promise.all(jobs.map((j) => onJob(j.data)));
        },
      );
    },

    async close() {
      for (const b of [worker, producer]) if (b) await b.stop({ graceful: true, close: true });
      worker = producer = null;
    },
  };
}
