import { Cron, Job, JobsModule, OnJobEvent, type JobEvents } from 'nestjs-durable-jobs';
import { JobsDashboardModule } from 'nestjs-durable-jobs/dashboard';
import { MODULE_SHAPE } from '../../lib/jobs-options.keys.js';
import { databaseUrl } from './database.js';
import type { OptionsPosition } from './unknown-keys.js';

/**
 * The options objects of JobsModule, the dashboard and the decorators, for
 * unknown-options.e2e.spec.ts: where each sits, what it knows, and a call
 * that hands one over. None needs a running app.
 */

/** Known keys, as each message lists them: the options each interface declares. */
export const STEP = [
  'delay',
  'runAt',
  'priority',
  'queue',
  'maxAttempts',
  'timeout',
  'group',
  'serialKey',
  'unique',
  'deadline',
  'context',
];
export const ENQUEUE = [...STEP, 'manager', 'after'];
export const JOB = [
  'queue',
  'maxAttempts',
  'backoff',
  'timeout',
  'priority',
  'concurrency',
  'rateLimit',
  'unique',
  'serialKey',
  'group',
  'interceptors',
  'encrypted',
  'onFailureRetries',
  'keep',
];
export const KEEP = ['succeeded'];
export const FAILURE_HOOK_RETRIES = ['attempts', 'backoff'];
export const UNIQUE = ['key', 'while', 'for', 'ttl', 'replace'];
export const BACKOFF = ['type', 'delay', 'maxDelay', 'jitter'];
export const RATE_LIMIT = ['max', 'per'];
export const MODULE = [
  'dataSource',
  'connection',
  'pooler',
  'directConnection',
  'maxConnections',
  'embedded',
  'schema',
  'migrationsRun',
  'timeouts',
  'worker',
  'retention',
  'queues',
  'rateLimits',
  'defaults',
  'interceptors',
  'externalJobs',
  'unregisteredJobs',
  'unhandledJobs',
  'service',
  'maxPayloadBytes',
  'contextFrom',
  'maxResultBytes',
  'maxErrorBytes',
  'monitoring',
  'scheduler',
  'tracing',
  'encryption',
  'clock',
];
export const WORKER = [
  'enabled',
  'concurrency',
  'queues',
  'pollInterval',
  'lease',
  'shutdownGrace',
  'prefetch',
  'progressThrottle',
  'synchronousCommit',
];
/** TypeORM's postgres options, which that module checks against TypeORM's own types. */
export const CONNECTION = MODULE_SHAPE.nested.connection!.keys;
export const WRITE = ['manager'];

const forRoot = (options: Record<string, unknown>) => JobsModule.forRoot(options as never);
/** JobsModule.forRoot with `nested` at `key` of otherwise valid options. */
const forRootWith = (key: string, nested: Record<string, unknown>) =>
  forRoot({ connection: databaseUrl(), [key]: nested });

/** JobsModule's options, each nested object on its own, and the dashboard's. */
export const modulePositions: OptionsPosition[] = [
  {
    where: 'JobsModule.forRoot()',
    known: [...MODULE, 'isGlobal'],
    base: () => ({ connection: databaseUrl() }),
    call: forRoot,
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'connection.',
    known: CONNECTION,
    refusedOtherwise: ['type', 'entities', 'migrations'],
    base: () => ({ url: databaseUrl() }),
    call: (o) => forRootWith('connection', o),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'embedded.',
    known: ['dataDir', 'port', 'database', 'logger'],
    call: (o) => forRoot({ embedded: o }),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'timeouts.',
    known: ['statement', 'query', 'connect'],
    base: () => ({ query: 5_000 }),
    call: (o) => forRootWith('timeouts', o),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'worker.',
    known: WORKER,
    base: () => ({ concurrency: 2 }),
    call: (o) => forRootWith('worker', o),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'worker.queues.video.',
    known: ['concurrency'],
    base: () => ({ concurrency: 1 }),
    call: (o) => forRootWith('worker', { queues: { video: o } }),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'retention.',
    known: ['succeeded', 'failed', 'cancelled', 'workers', 'interval', 'pause', 'chunk'],
    call: (o) => forRootWith('retention', o),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'monitoring.',
    known: ['replica'],
    call: (o) => forRootWith('monitoring', o),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'queues.emails.',
    known: ['concurrency', 'rateLimit', 'groups'],
    call: (o) => forRootWith('queues', { emails: o }),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'queues.emails.rateLimit.',
    known: RATE_LIMIT,
    base: () => ({ max: 1, per: 1_000 }),
    call: (o) => forRootWith('queues', { emails: { rateLimit: o } }),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'queues.emails.groups.',
    known: ['concurrency', 'rateLimit', 'minInflight', 'shareThreshold'],
    call: (o) => forRootWith('queues', { emails: { groups: o } }),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'queues.emails.groups.rateLimit.',
    known: RATE_LIMIT,
    base: () => ({ max: 10, per: 1_000 }),
    call: (o) => forRootWith('queues', { emails: { groups: { rateLimit: o } } }),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'rateLimits.partner-api.',
    known: RATE_LIMIT,
    base: () => ({ max: 10, per: 1_000 }),
    call: (o) => forRootWith('rateLimits', { 'partner-api': o }),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'encryption.',
    known: ['keys', 'current', 'all'],
    base: () => ({ keys: { k: 'x' }, current: 'k' }),
    call: (o) => forRootWith('encryption', o),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'defaults.',
    known: ['maxAttempts', 'backoff', 'timeout', 'onFailureRetries'],
    call: (o) => forRootWith('defaults', o),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'defaults.onFailureRetries.',
    known: FAILURE_HOOK_RETRIES,
    base: () => ({ attempts: 2 }),
    call: (o) => forRootWith('defaults', { onFailureRetries: o }),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'defaults.backoff.',
    known: BACKOFF,
    base: () => ({ type: 'fixed', delay: 10 }),
    call: (o) => forRootWith('defaults', { backoff: o }),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'externalJobs.ext.',
    known: JOB,
    base: () => ({ queue: 'emails' }),
    call: (o) => forRootWith('externalJobs', { ext: o }),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'unhandledJobs.',
    known: ['failAfter'],
    call: (o) => forRootWith('unhandledJobs', o),
  },
  {
    where: 'JobsModule.forRoot()',
    path: 'scheduler.',
    known: ['enabled', 'syncCodeSchedules', 'pollInterval', 'misfireThreshold'],
    call: (o) => forRootWith('scheduler', o),
  },
  {
    where: 'JobsModule.forRootAsync()',
    known: ['imports', 'isGlobal', 'inject', 'useFactory', 'useClass', 'useExisting'],
    base: () => ({ useFactory: () => ({}) }),
    call: (o) => JobsModule.forRootAsync(o as never),
  },
  {
    where: 'JobsDashboardModule.register()',
    known: ['path', 'guards', 'public', 'title', 'allowedOrigins', 'traceUrl'],
    base: () => ({ public: true }),
    call: (o) => JobsDashboardModule.register(o as never),
  },
];

class Listener {
  onFailed() {}
}
/** The decorators' options, applied to a fresh class (or method) each time; JobEvents.on's filter. */
export function decoratorPositions(events: () => JobEvents): OptionsPosition[] {
  return [
    {
      where: "@Job('unknown-probe') on class Probe",
      known: JOB,
      base: () => ({ queue: 'emails' }),
      call: (o) => Job('unknown-probe', o as never)(class Probe {}),
    },
    {
      where: "@Job('unknown-probe') on class Probe",
      path: 'backoff.',
      known: BACKOFF,
      base: () => ({ type: 'exponential', delay: 10 }),
      call: (o) => Job('unknown-probe', { backoff: o as never })(class Probe {}),
    },
    {
      where: "@Job('unknown-probe') on class Probe",
      path: 'onFailureRetries.',
      known: FAILURE_HOOK_RETRIES,
      base: () => ({ attempts: 2 }),
      call: (o) => Job('unknown-probe', { onFailureRetries: o as never })(class Probe {}),
    },
    {
      where: "@Job('unknown-probe') on class Probe",
      path: 'keep.',
      known: KEEP,
      base: () => ({ succeeded: false }),
      call: (o) => Job('unknown-probe', { keep: o as never })(class Probe {}),
    },
    {
      where: "@Job('unknown-probe') on class Probe",
      path: 'onFailureRetries.backoff.',
      known: BACKOFF,
      base: () => ({ type: 'fixed', delay: 10 }),
      call: (o) => Job('unknown-probe', { onFailureRetries: { backoff: o as never } })(class Probe {}),
    },
    {
      where: "@Job('unknown-probe') on class Probe",
      path: 'rateLimit.',
      known: RATE_LIMIT,
      base: () => ({ max: 1, per: 10 }),
      call: (o) => Job('unknown-probe', { rateLimit: o as never })(class Probe {}),
    },
    {
      where: "@Job('unknown-probe') on class Probe",
      path: 'unique.',
      known: UNIQUE,
      base: () => ({ key: 'probe' }),
      call: (o) => Job('unknown-probe', { unique: o as never })(class Probe {}),
    },
    {
      where: "@Cron('0 3 * * *') on class Probe",
      known: ['timeZone', 'payload', 'name', 'catchUp', 'overlap'],
      base: () => ({ timeZone: 'Europe/Berlin' }),
      call: (o) => Cron('0 3 * * *', o as never)(class Probe {}),
    },
    {
      where: '@OnJobEvent() on Listener.onFailed',
      known: ['queue', 'name'],
      base: () => ({ queue: 'emails' }),
      call: (o) =>
        OnJobEvent('failed', o as never)(
          Listener.prototype,
          'onFailed',
          Object.getOwnPropertyDescriptor(Listener.prototype, 'onFailed')!,
        ),
    },
    {
      where: 'JobEvents.on()',
      known: ['queue', 'name', 'label'],
      call: (o) => events().on('failed', () => undefined, o as never),
    },
  ];
}
