// nestjs-durable-jobs, imported from a build output (dist/lib) as an app
// would, inside a real Nest application context. Plain JS, so decorators are
// applied by hand with Reflect.decorate. `ours.mjs` measures this checkout's
// build; `ours-base.mjs` another commit's (an A/B run, see run.sh).
//
// Bare imports here (reflect-metadata, @nestjs/*) resolve past bench/ to the
// repository's node_modules: the same copies dist/lib itself loads, which Nest's
// DI needs (two copies of @nestjs/common would not share metadata). A base
// checkout links its node_modules to the same folder for that reason.
import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DATABASE_URL, analyzeSchema, dropSchema, sleep, sql } from '../common.mjs';

const JOB = 'noop';
// The signal the signal scenarios' jobs wait for, and how long they wait: parked an hour ahead.
const SIGNAL = 'go';
const SIGNAL_WAIT_MS = 3_600_000;

/** An adapter over the build at `dist` (a file URL of its lib/index.js), in its own schema. */
export async function oursAdapter({ name, label, dist, schema: SCHEMA, synchronousCommit = false, forget = false }) {
  const lib = await import(dist);
  const { JobsModule, Job, JobQueue, BatchBuilder } = lib;
  // Builds with flow control (JobQueues) take the flow-control scenarios; an older base build does not.
  const flowControl = typeof lib.JobQueues === 'function';
  // Builds with durable steps and ctx.transaction take the scenarios that measure them.
  const durableSteps = typeof lib.MAX_STEP_NAME_LENGTH === 'number';
  // Builds with encryption at rest take the scenarios that measure it.
  const encryption = typeof lib.EncryptedValueError === 'function';
  // Builds with the pooler options (pooler, directConnection) take the PgBouncer scenarios; they export
  // nothing of them to test for, so the file of their pooler probe tells.
  // Builds with durable execution (JobQueue.waitFor, signal) take the scenarios that measure them.
  const endWaits = typeof JobQueue.prototype.waitFor === 'function';
  const signals = typeof JobQueue.prototype.signal === 'function';
  // Builds with ctx.invoke (child jobs) take the invoke scenarios.
  const invokes = typeof lib.ChildJobFailedError === 'function';
  const poolerOptions = existsSync(fileURLToPath(new URL('./storage/connection/pooler-probe.js', dist)));
  // A fixed key: the bench measures the sealing, not the key's secrecy.
  const keyring = encryption
    ? { keys: { bench: Buffer.alloc(32, 7).toString('base64') }, current: 'bench' }
    : undefined;
  // The 'limit' scenario's queue: at most 10 of its jobs run at once, across the worker processes.
  const queues = flowControl ? { limited: { concurrency: 10 } } : undefined;

  const POLL_MS = 500; // the same idle-poll backstop pg-boss gets

  const settings = (c) => ({
    'worker.concurrency': c,
    'worker.prefetch': 500,
    'worker.pollInterval': POLL_MS,
    'worker.synchronousCommit': synchronousCommit,
    ...(forget ? { 'retention.succeeded': 0 } : {}),
    connection: 'TypeORM pg pool, default size',
  });

  // One handler class per process: the library remembers every class that
  // carried @Job and refuses to start while one of them is not a provider, so a
  // fresh class per app would trip that check on the second app of a process.
  let onJobHook = () => {};
  class Noop {
    // `steps`: that many no-op ctx.step() calls; `tx`: an empty ctx.transaction() writes the success.
    // `signal`: waits for the signal SIGNAL (parked until it comes); the hook runs once the wait
    // returned, on the attempt that resumed, and a resume with a payload that is not the job's own
    // (or none: the wait ran out) is reported outside the counted range. `holdMs`: the handler waits
    // that long, then the hook runs just before it returns (the waitfor scenario's end time).
    // `invoke`: the index of the child this job invokes (ctx.invoke of this same job type, payload
    // { i: invoke, child: true }); the hook runs once invoke() returned, on the attempt that replayed
    // it, and a result that is not the child's own is reported outside the counted range. Every
    // attempt of such a parent first marks its start uncounted (the drain's clock starts at the
    // first parent, not at the first child). `child`: returns { child: i }, its index.
    // A plain drain's payload has none of them.
    async run(payload, ctx) {
      if (payload.invoke !== undefined) {
        onJobHook({ mark: true });
        const got = await ctx.invoke(NoopJob, { i: payload.invoke, child: true });
        await onJobHook(got?.child === payload.invoke ? payload : { i: -3 });
        return { child: got?.child ?? null };
      }
      if (payload.child) {
        await onJobHook(payload);
        return { child: payload.i };
      }
      if (payload.steps) for (let s = 0; s < payload.steps; s++) await ctx.step(`s${s}`, () => s);
      if (payload.tx) await ctx.transaction(async () => null);
      if (payload.signal) {
        const got = await ctx.waitForSignal(SIGNAL, { timeout: SIGNAL_WAIT_MS });
        return onJobHook(got?.i === payload.i ? payload : { i: -2 });
      }
      if (payload.holdMs) await sleep(payload.holdMs);
      await onJobHook(payload);
    }
  }
  const NoopJob = Reflect.decorate([Job(JOB, { queue: 'default' })], Noop);
  // The same handler for jobs whose payload, result and errors are sealed.
  class SecretNoop extends Noop {}
  const SecretJob = encryption
    ? Reflect.decorate([Job(`${JOB}-secret`, { queue: 'default', encrypted: true })], SecretNoop)
    : null;

  // Builds the app: a producer (worker disabled) or a worker running onJob. `connection`: how it
  // reaches PostgreSQL (the PgBouncer scenarios pass the pooler's options); direct by default.
  async function boot({ worker, onJob, connection = { connection: DATABASE_URL } }) {
    if (onJob) onJobHook = onJob;
    class BenchModule {}
    const AppModule = Reflect.decorate(
      [
        Module({
          // 'ignore': ours and ours-sync load one build in one process, each with a Noop class of its own.
          imports: [
            JobsModule.forRoot({
              ...connection,
              schema: SCHEMA,
              worker,
              queues,
              unregisteredJobs: 'ignore',
              ...(forget ? { retention: { succeeded: 0 } } : {}),
              ...(keyring ? { encryption: keyring } : {}),
            }),
          ],
          providers: SecretJob ? [NoopJob, SecretJob] : [NoopJob],
        }),
      ],
      BenchModule,
    );
    const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
    return { app, queue: app.get(JobQueue), Noop: NoopJob, Secret: SecretJob };
  }

  function create() {
    let producer = null;
    let worker = null;

    const client = async () => (producer ??= await boot({ worker: { enabled: false } }));

    return {
      name,
      label,
      storage: 'postgres',
      drainsOnly: forget,
      flowControl,
      durableSteps,
      encryption,
      endWaits,
      signals,
      invokes,
      // The flow-control scenarios this build takes (enqueueFlow's kinds).
      flow: flowControl ? ['limit', 'serial', 'groups'] : [],
      // Builds with the pooler options take the PgBouncer scenarios, with LISTEN on directConnection or without.
      pooler: poolerOptions && {
        listenOptional: true,
        note: `pooler: 'transaction'; LISTEN on directConnection (the direct URL), or, in the "polling" rows, none: polls every ${POLL_MS} ms`,
      },

      async open() {
        await client();
      },

      // The module creates and migrates its schema on start.
      async reset() {
        await this.close();
        await dropSchema(SCHEMA);
        await client();
      },

      async cleanup() {
        await this.close();
        await dropSchema(SCHEMA);
      },

      async enqueueBulk(n, offset = 0) {
        const { queue, Noop } = await client();
        const items = new Array(n);
        for (let k = 0; k < n; k++) items[k] = { job: Noop, payload: { i: offset + k } };
        await queue.enqueueMany(items);
      },

      // The step scenarios: n jobs whose payloads carry `extra` beside their index.
      async enqueueBulkPayload(n, extra) {
        const { queue, Noop } = await client();
        const items = new Array(n);
        for (let k = 0; k < n; k++) items[k] = { job: Noop, payload: { i: k, ...extra } };
        await queue.enqueueMany(items);
      },

      // The encryption scenarios: as enqueueBulk, of the job type declared { encrypted: true }.
      async enqueueBulkEncrypted(n) {
        const { queue, Secret } = await client();
        const items = new Array(n);
        for (let k = 0; k < n; k++) items[k] = { job: Secret, payload: { i: k } };
        await queue.enqueueMany(items);
      },

      // The flow-control scenarios: n jobs with per-job options (a queue, a group, a unique key).
      // Returns how many jobs were created (duplicates of a unique key are not).
      async enqueueBulkWith(n, optionsFor) {
        const { queue, Noop } = await client();
        const items = new Array(n);
        for (let k = 0; k < n; k++) items[k] = { job: Noop, payload: { i: k }, options: optionsFor(k) };
        return (await queue.enqueueMany(items)).filter((r) => r.created).length;
      },

      // limit: the queue declared { concurrency: 10 }; serial: serialKey (one running per key);
      // groups: fair shares over `keys` groups of one queue, with no per-group limit.
      async enqueueFlow(n, kind, keys) {
        const options = {
          limit: () => ({ queue: 'limited' }),
          serial: (i) => ({ serialKey: `k-${i % keys}` }),
          groups: (i) => ({ queue: 'grouped', group: `tenant-${i % keys}` }),
        }[kind];
        await this.enqueueBulkWith(n, options);
      },

      // One batch of n - 1 members, each counting in the same batch row, and
      // its callback as job n - 1: the exactly-once check covers the callback.
      async enqueueBatch(n) {
        const { app, Noop } = await client();
        const draft = app.get(BatchBuilder).create('bench');
        for (let k = 0; k < n - 1; k++) draft.add(Noop, { i: k });
        await draft.then(Noop, { i: n - 1 }).dispatch();
      },

      async enqueueOne(i) {
        const { queue, Noop } = await client();
        await queue.enqueue(Noop, { i });
      },

      // The uniqueone scenario: one enqueue with a unique key (held while queued or active, the default).
      ...(flowControl && {
        async enqueueUnique(i, key) {
          const { queue, Noop } = await client();
          await queue.enqueue(Noop, { i }, { unique: { key } });
        },
      }),

      // The signal scenarios: n jobs that each wait for the signal, with indexes from `offset`; their ids.
      async enqueueSignalWaiters(n, offset = 0) {
        const { queue, Noop } = await client();
        const items = new Array(n);
        for (let k = 0; k < n; k++) items[k] = { job: Noop, payload: { i: offset + k, signal: true } };
        return (await queue.enqueueMany(items)).map((r) => r.id);
      },

      // Jobs parked in the wait: queued, flagged with the signal's name, due no sooner than in 50 minutes.
      async parkedCount() {
        const { rows } = await sql(
          `SELECT count(*) AS n FROM ${SCHEMA}.job
            WHERE state = 'queued' AND awaits_signal = $1 AND run_at > now() + interval '50 minutes'`,
          [SIGNAL],
        );
        return Number(rows[0].n);
      },

      // The job's signal, carrying its index (the handler checks it is its own).
      async signal(id, i) {
        const { queue } = await client();
        await queue.signal(id, SIGNAL, { i });
      },

      // Signals stored and consumed: every one consumed once the jobs resumed.
      async signalCounts() {
        const { rows } = await sql(
          `SELECT count(*) AS sent, count(consumed_at) AS consumed FROM ${SCHEMA}.job_signal WHERE name = $1`,
          [SIGNAL],
        );
        return { sent: Number(rows[0].sent), consumed: Number(rows[0].consumed) };
      },

      // The invoke scenarios: n parents with indexes from `offset`, parent k invoking the child of index
      // childOffset + k.
      async enqueueInvokers(n, childOffset, offset = 0) {
        const { queue, Noop } = await client();
        const items = new Array(n);
        for (let k = 0; k < n; k++) items[k] = { job: Noop, payload: { i: offset + k, invoke: childOffset + k } };
        await queue.enqueueMany(items);
      },

      // One parent, enqueued alone (invoke-latency): job i invoking the child of index `child`.
      async enqueueInvoker(i, child) {
        const { queue, Noop } = await client();
        await queue.enqueue(Noop, { i, invoke: child });
      },

      // What the job table says of n parents of enqueueInvokers: every one succeeded with its own
      // child's result, and every child (exactly one row per parent, linked by invoked_by, none stray)
      // succeeded in its first attempt. Throws with the counts when any does not hold.
      async checkInvoked(n) {
        const { rows } = await sql(
          `WITH p AS (SELECT * FROM ${SCHEMA}.job WHERE payload ? 'invoke'),
                c AS (SELECT * FROM ${SCHEMA}.job WHERE invoked_by IS NOT NULL),
                per AS (SELECT p.id, p.state, p.result, p.payload, count(c.id) AS children,
                               bool_and(c.state = 'succeeded' AND c.attempt = 1
                                        AND (c.payload->>'i')::int = (p.payload->>'invoke')::int
                                        AND c.result = jsonb_build_object('child', (p.payload->>'invoke')::int)
                                        AND p.result = c.result) AS child_ok
                          FROM p LEFT JOIN c ON c.invoked_by = p.id GROUP BY p.id, p.state, p.result, p.payload)
           SELECT (SELECT count(*) FROM per) AS parents,
                  (SELECT count(*) FROM per WHERE state = 'succeeded') AS succeeded,
                  (SELECT count(*) FROM per WHERE children = 1) AS one_child,
                  (SELECT count(*) FROM per WHERE children = 1 AND child_ok) AS with_result,
                  (SELECT count(*) FROM c) AS children`,
        );
        const r = Object.fromEntries(Object.entries(rows[0]).map(([k, v]) => [k, Number(v)]));
        if (r.parents !== n || r.succeeded !== n || r.one_child !== n || r.with_result !== n || r.children !== n) {
          throw new Error(`invoke: ${JSON.stringify(r)}; ${n} parents expected, each succeeded with one child's result`);
        }
        // When the phases ended, in seconds from the first child's enqueue (the database's clock,
        // transaction start times): the parents' first attempts (the last child enqueued), the
        // children, the parents' replays. For the JSON, not the table.
        const { rows: t } = await sql(
          `WITH p AS (SELECT * FROM ${SCHEMA}.job WHERE payload ? 'invoke'),
                c AS (SELECT * FROM ${SCHEMA}.job WHERE invoked_by IS NOT NULL),
                z AS (SELECT min(created_at) AS z FROM c)
           SELECT extract(epoch FROM (SELECT max(created_at) FROM c) - z) AS "lastChildEnqueued",
                  extract(epoch FROM (SELECT max(completed_at) FROM c) - z) AS "lastChildDone",
                  extract(epoch FROM (SELECT max(completed_at) FROM p) - z) AS "lastParentDone",
                  (SELECT avg(attempt) FROM p) AS "parentAttempts"
             FROM z`,
        );
        r.timeline = Object.fromEntries(Object.entries(t[0]).map(([k, v]) => [k, Number(v)]));
        return r;
      },

      // The waitfor scenario: one job whose handler waits holdMs before it ends; its id is the handle.
      async enqueueHeld(i, holdMs) {
        const { queue, Noop } = await client();
        return (await queue.enqueue(Noop, { i, holdMs })).id;
      },

      // Resolves once the job ended (JobQueue.waitFor): true when it succeeded.
      async waitForEnd(id, timeoutMs) {
        const { queue } = await client();
        return (await queue.waitFor(id, { timeout: timeoutMs })).state === 'succeeded';
      },

      async jobCount() {
        return Number((await sql(`SELECT count(*) AS n FROM ${SCHEMA}.job`)).rows[0].n);
      },

      // Rows shaped like the ones the library leaves after a first attempt that
      // succeeded: no execution row, and UUIDv7 ids from the past (the library
      // makes time-ordered ids, so finished jobs sit at the old end of the key
      // range and new jobs at the hot edge; random v4 ids would scatter them).
      // This follows the library's current schema: change it if that changes.
      async prefillFinished(n) {
        await client();
        await sql(
          `INSERT INTO ${SCHEMA}.job (id, name, queue, payload, state, priority, run_at, attempt, max_attempts,
                                   created_at, started_at, completed_at)
         SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(r, 1, 3) || '-8' || substr(r, 4, 3)
                 || '-' || substr(r, 7, 12))::uuid,
                $2, 'default', jsonb_build_object('i', -g), 'succeeded', 0, now(), 1, 3, now(), now(), now()
           FROM generate_series(1, $1::int) g,
                LATERAL (SELECT lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint - 86400000 + g), 12, '0') AS h,
                                md5(g::text) AS r) x`,
          [n, JOB],
        );
      },

      analyze: () => analyzeSchema(SCHEMA),

      // As pendingCount, with only the queued jobs that are due: jobs parked an hour ahead are not
      // pending for a drain.
      async pendingDueCount() {
        const { rows } = await sql(
          `SELECT (SELECT count(*) FROM ${SCHEMA}.job WHERE state = 'queued' AND run_at <= now())
              + (SELECT count(*) FROM ${SCHEMA}.job WHERE lease_expires_at IS NOT NULL)
              + (SELECT count(*) FROM ${SCHEMA}.job WHERE state = 'waiting') AS n`,
        );
        return Number(rows[0].n);
      },

      // Unfinished jobs, each count served by a partial index: queued (the claim
      // index), active (an active job is exactly one holding a lease: the lease
      // index), waiting (the batch scenario's callback).
      async pendingCount() {
        const { rows } = await sql(
          `SELECT (SELECT count(*) FROM ${SCHEMA}.job WHERE state = 'queued')
              + (SELECT count(*) FROM ${SCHEMA}.job WHERE lease_expires_at IS NOT NULL)
              + (SELECT count(*) FROM ${SCHEMA}.job WHERE state = 'waiting') AS n`,
        );
        return Number(rows[0].n);
      },

      // `pooled`: through a transaction pooler at pooled.url; LISTEN (and this start's migrations) on
      // the direct URL when pooled.listen, else none: the worker polls.
      async startWorker({ concurrency, onJob, pooled }) {
        // A fixed local buffer of 500, as graphile-worker's localQueue.size here; the default adapts to the rate.
        worker = await boot({
          worker: { enabled: true, concurrency, pollInterval: POLL_MS, prefetch: 500, synchronousCommit },
          onJob,
          connection: pooled && {
            connection: pooled.url,
            pooler: 'transaction',
            ...(pooled.listen ? { directConnection: DATABASE_URL } : {}),
          },
        });
      },

      async close() {
        for (const x of [worker, producer]) if (x) await x.app.close();
        worker = producer = null;
      },
    };
  }

  return { create, settings };
}
