import type { INestApplication } from '@nestjs/common';
import { BatchBuilder, JobQueue, JobQueues, JobsAdmin, JobsMonitor, RecurringSchedules } from 'nestjs-durable-jobs';
import { JobsHealthIndicator } from 'nestjs-durable-jobs/health';
import { JobsTestingModule, type JobsTester } from 'nestjs-durable-jobs/testing';
import { databaseUrl } from './database.js';
import { ENQUEUE, MODULE, RATE_LIMIT, STEP, UNIQUE, WORKER, WRITE } from './option-positions.js';
import { Echo } from './property-jobs.js';
import type { OptionsPosition } from './unknown-keys.js';

/**
 * The options objects of the calls an app makes, for
 * unknown-options.e2e.spec.ts: on the app's services (an app with Echo
 * registered and a queue "emails" declared) and on a testing-kit app's
 * JobsTester.
 */

/** Any job or batch id: the options are refused before anything is looked up. */
export const UUID = '01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f';

/** JobQueue's calls, batches, flows, chains, JobQueues and RecurringSchedules. */
export function queuePositions(app: () => INestApplication): OptionsPosition[] {
  const jobs = () => app().get(JobQueue);
  const batches = () => app().get(BatchBuilder);
  return [
    {
      where: 'enqueue(Echo)',
      known: ENQUEUE,
      base: () => ({ delay: 5_000 }),
      call: (o) => jobs().enqueue(Echo, { n: 1 }, o as never),
    },
    { where: "enqueue('prop-echo')", known: ENQUEUE, call: (o) => jobs().enqueue('prop-echo', { n: 1 }, o as never) },
    {
      where: 'enqueue(Echo)',
      path: 'unique.',
      known: UNIQUE,
      base: () => ({ key: 'order-7' }),
      call: (o) => jobs().enqueue(Echo, {}, { unique: o as never }),
    },
    {
      where: `enqueue('prop-echo'): "after" entry 0`,
      known: ['job', 'batch', 'on'],
      base: () => ({ job: UUID }),
      call: (o) => jobs().enqueue(Echo, {}, { after: [o as never] }),
    },
    { where: 'enqueueMany()', known: WRITE, call: (o) => jobs().enqueueMany([{ job: Echo, payload: 1 }], o as never) },
    // The valid item first: a refusal must take it back too.
    {
      where: 'enqueueMany(): item 1',
      known: ['job', 'payload', 'options'],
      base: () => ({ job: Echo, payload: 2 }),
      call: (o) => jobs().enqueueMany([{ job: Echo, payload: 1 }, o as never]),
    },
    {
      where: 'enqueueMany(): item 1',
      path: 'options.',
      known: ENQUEUE,
      call: (o) =>
        jobs().enqueueMany([
          { job: Echo, payload: 1 },
          { job: Echo, payload: 2, options: o as never },
        ]),
    },
    {
      where: 'batch "b".add(Echo)',
      known: [...STEP, 'key', 'after', 'manager'],
      call: (o) =>
        batches()
          .create('b')
          .add(Echo, 1)
          .add(Echo, 2, o as never)
          .dispatch(),
    },
    {
      where: 'batch "b".then(\'prop-echo\')',
      known: ENQUEUE,
      call: (o) =>
        batches()
          .create('b')
          .add(Echo, 1)
          .then('prop-echo', 2, o as never)
          .dispatch(),
    },
    {
      where: 'batch "b".catch(Echo)',
      known: ENQUEUE,
      call: (o) =>
        batches()
          .create('b')
          .add(Echo, 1)
          .catch(Echo, 2, o as never)
          .dispatch(),
    },
    {
      where: 'batch "b".finally(Echo)',
      known: ENQUEUE,
      call: (o) =>
        batches()
          .create('b')
          .add(Echo, 1)
          .finally(Echo, 2, o as never)
          .dispatch(),
    },
    {
      where: 'batch "b".dispatch()',
      known: WRITE,
      call: (o) =>
        batches()
          .create('b')
          .add(Echo, 1)
          .then(Echo, 2)
          .dispatch(o as never),
    },
    {
      where: "flow().add('b')",
      known: [...STEP, 'after', 'manager'],
      base: () => ({ after: ['a'] }),
      call: (o) =>
        jobs()
          .flow()
          .add('a', Echo, 1)
          .add('b', Echo, 2, o as never)
          .dispatch(),
    },
    {
      where: `flow().add('b'): "after" entry 0`,
      known: ['key', 'job', 'batch', 'on'],
      base: () => ({ key: 'a' }),
      call: (o) =>
        jobs()
          .flow()
          .add('a', Echo, 1)
          .add('b', Echo, 2, { after: [o as never] })
          .dispatch(),
    },
    {
      where: 'flow().dispatch()',
      known: WRITE,
      call: (o) =>
        jobs()
          .flow()
          .add('a', Echo, 1)
          .dispatch(o as never),
    },
    {
      where: 'chain().then(Echo)',
      known: ENQUEUE,
      call: (o) =>
        jobs()
          .chain()
          .then(Echo, 1)
          .then(Echo, 2, o as never)
          .dispatch(),
    },
    {
      where: 'chain().dispatch()',
      known: WRITE,
      call: (o) =>
        jobs()
          .chain()
          .then(Echo, 1)
          .dispatch(o as never),
    },
    { where: `get(${UUID})`, known: ['stepResults'], call: (o) => jobs().get(UUID, o as never) },
    { where: `retry(${UUID})`, known: ['resetSteps', 'fromStep'], call: (o) => jobs().retry(UUID, o as never) },
    {
      where: `executions(${UUID})`,
      known: ['after', 'limit'],
      call: (o) => jobs().executions(UUID, o as never),
    },
    {
      where: `batchMembers(${UUID})`,
      known: ['state', 'skip', 'take'],
      call: (o) => jobs().batchMembers(UUID, o as never),
    },
    {
      where: "JobQueues.setLimits('emails')",
      known: ['concurrency', 'rateLimit'],
      base: () => ({ concurrency: 3 }),
      call: (o) =>
        app()
          .get(JobQueues)
          .setLimits('emails', o as never),
    },
    {
      where: "JobQueues.setLimits('emails')",
      path: 'rateLimit.',
      known: RATE_LIMIT,
      base: () => ({ max: 1, per: 10 }),
      call: (o) =>
        app()
          .get(JobQueues)
          .setLimits('emails', { rateLimit: o as never }),
    },
    {
      where: "JobQueues.setLimits('emails')",
      known: ['job'],
      call: (o) =>
        app()
          .get(JobQueues)
          .setLimits('emails', { concurrency: 3 }, o as never),
    },
    {
      where: "JobQueues.setGroupLimits('emails')",
      known: ['concurrency'],
      base: () => ({ concurrency: 3 }),
      call: (o) =>
        app()
          .get(JobQueues)
          .setGroupLimits('emails', 'tenant-1', o as never),
    },
    {
      where: "RecurringSchedules.upsert('unknown-probe')",
      known: ['timeZone', 'payload', 'catchUp', 'overlap'],
      call: (o) =>
        app()
          .get(RecurringSchedules)
          .upsert('unknown-probe', Echo, '0 3 * * *', o as never),
    },
  ];
}

const BULK = ['state', 'queue', 'name', 'batchId', 'idPrefix', 'ids'];
/** JobsAdmin's and JobsMonitor's filters and options, and the health check's. */
export function operatorPositions(app: () => INestApplication): OptionsPosition[] {
  const admin = () => app().get(JobsAdmin);
  const monitor = () => app().get(JobsMonitor);
  return [
    {
      where: 'JobsAdmin.search()',
      known: ['state', 'queue', 'name', 'nameContains', 'batchId', 'idPrefix', 'before', 'limit', 'ids'],
      call: (o) => admin().search(o as never),
    },
    { where: `JobsAdmin.detail(${UUID})`, known: ['stepResults'], call: (o) => admin().detail(UUID, o as never) },
    { where: 'JobsAdmin.retryAll()', known: BULK, call: (o) => admin().retryAll(o as never) },
    { where: 'JobsAdmin.cancelAll()', known: BULK, call: (o) => admin().cancelAll(o as never) },
    {
      where: 'JobsAdmin.purge()',
      known: ['succeededBefore', 'failedBefore', 'cancelledBefore', 'skippedBefore', 'pause'],
      base: () => ({ succeededBefore: new Date(0) }),
      call: (o) => admin().purge(o as never),
    },
    {
      where: 'JobsAdmin.listBatches()',
      known: ['state', 'name', 'before', 'limit'],
      call: (o) => admin().listBatches(o as never),
    },
    { where: 'JobsAdmin.throughput()', known: ['minutes', 'queue'], call: (o) => admin().throughput(o as never) },
    {
      where: 'JobsMonitor.counts()',
      known: ['since', 'finished', 'fromPrimary'],
      call: (o) => monitor().counts(o as never),
    },
    {
      where: 'JobsMonitor.workers()',
      known: ['stoppedWithin', 'fromPrimary'],
      call: (o) => monitor().workers(o as never),
    },
    {
      where: 'JobsMonitor.jobs()',
      known: ['state', 'queue', 'name', 'before', 'limit'],
      call: (o) => monitor().jobs(o as never),
    },
    {
      where: 'JobsHealthIndicator.isHealthy()',
      known: ['maxQueued', 'timeout', 'maxReplicaLag'],
      call: (o) => new JobsHealthIndicator({} as never, monitor()).isHealthy('jobs', o as never),
    },
    {
      where: 'JobsHealthIndicator.checkSystem()',
      known: ['maxQueued', 'timeout', 'maxReplicaLag'],
      call: (o) => new JobsHealthIndicator({} as never, monitor()).checkSystem('jobs-system', o as never),
    },
    {
      where: 'JobsMonitor.queueLag()',
      known: ['fromPrimary'],
      call: (o) => monitor().queueLag(o as never),
    },
    {
      where: 'JobsMonitor.unhandledJobs()',
      known: ['fromPrimary'],
      call: (o) => monitor().unhandledJobs(o as never),
    },
  ];
}

export const TESTING = [...MODULE.filter((k) => k !== 'schema'), 'mode', 'schemaPrefix', 'keepSchema'];
const ENQUEUED = ['name', 'queue', 'state', 'payload'];
/** The testing kit's options and the JobsTester's calls. */
export function kitPositions(tester: () => JobsTester): OptionsPosition[] {
  return [
    {
      where: 'JobsTestingModule.forRoot()',
      known: [...TESTING, 'isGlobal'],
      refusedOtherwise: ['schema'],
      base: () => ({ connection: databaseUrl() }),
      call: (o) => JobsTestingModule.forRoot(o as never),
    },
    {
      where: 'JobsTestingModule.forRoot()',
      path: 'worker.',
      known: WORKER,
      call: (o) => JobsTestingModule.forRoot({ connection: databaseUrl(), worker: o as never }),
    },
    {
      where: 'JobsTestingModule.forRootAsync()',
      known: ['imports', 'isGlobal', 'inject', 'useFactory'],
      base: () => ({ useFactory: () => ({}) }),
      call: (o) => JobsTestingModule.forRootAsync(o as never),
    },
    { where: 'JobsTester.drain()', known: ['queue', 'names', 'limit'], call: (o) => tester().drain(o as never) },
    { where: 'JobsTester.history()', known: ['name'], call: (o) => tester().history(o as never) },
    { where: `JobsTester.waitFor(${UUID})`, known: ['timeout'], call: (o) => tester().waitFor(UUID, o as never) },
    { where: 'JobsTester.enqueued()', known: ENQUEUED, call: (o) => tester().enqueued(o as never) },
    {
      where: 'expectEnqueued()',
      known: [...ENQUEUED, 'count'],
      base: () => ({ name: 'kit-greet' }),
      call: (o) => tester().expectEnqueued(o as never),
    },
    {
      where: 'expectNotEnqueued()',
      known: [...ENQUEUED, 'count'],
      base: () => ({ name: 'kit-greet' }),
      call: (o) => tester().expectNotEnqueued(o as never),
    },
  ];
}
