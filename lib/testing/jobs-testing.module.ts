import { Module, type DynamicModule, type InjectionToken, type Provider } from '@nestjs/common';
import { JobsModule } from '../jobs.module.js';
import type { JobsModuleOptions } from '../jobs-options.interface.js';
import { checkOptions, JobsError } from '../model/index.js';
import { JOB_CONTROL_STORAGE, type JobControlStorage } from '../storage/jobs/control/job-control-storage.interface.js';
import { ENQUEUE_STORAGE, type EnqueueStorage } from '../storage/jobs/enqueue/enqueue-storage.interface.js';
import { WORKFLOW_STORAGE, type WorkflowStorage } from '../storage/workflows/workflow-storage.interface.js';
import { JobDrainer } from './job-drainer.service.js';
import { JobsTester } from './jobs-tester.service.js';
import {
  JOBS_TESTING_SETTINGS,
  resolveTestingSettings,
  type JobsTestingAsyncOptions,
  type JobsTestingOptions,
  type JobsTestingSettings,
  TESTING_ASYNC_SHAPE,
} from './jobs-testing-options.interface.js';
import { StorageTap, tapControlStorage, tapEnqueueStorage, tapWorkflowStorage } from './storage-tap.js';
import { TestSchema } from './test-schema.service.js';

/** Where the storage JobsModule made stays, under the wrapper the testing kit puts in its place. */
const UNTAPPED_ENQUEUE_STORAGE = Symbol('UNTAPPED_ENQUEUE_STORAGE');
const UNTAPPED_CONTROL_STORAGE = Symbol('UNTAPPED_CONTROL_STORAGE');
const UNTAPPED_WORKFLOW_STORAGE = Symbol('UNTAPPED_WORKFLOW_STORAGE');

/**
 * JobsModule for tests: the same options (`connection` or `dataSource`,
 * `worker`, `defaults`, …) and the same providers, plus:
 *
 * - a schema of the app's own (`<schemaPrefix>_<time>_<random>`), made by the
 *   normal migrations at start and dropped at close, so that nothing else on
 *   the database (a dev server, another test file) takes its jobs;
 * - a ManualClock unless `clock` says otherwise;
 * - `mode`: `manual` (default; jobs run in `JobsTester.drain()`), `inline`
 *   (they run as soon as the write that made them due commits) or `worker`
 *   (the real worker runs them). Outside `worker`, the worker and the
 *   schedule timers are off;
 * - `JobsTester`, injectable or `app.get(JobsTester)`.
 *
 * Import it instead of JobsModule, beside the modules under test.
 */
@Module({})
export class JobsTestingModule {
  /**
   * The testing module with these options, global unless `isGlobal: false`. The options are checked
   * at the call: a bad `mode`, `schemaPrefix` or `clock`, a `schema`, an unknown key, no database, or
   * `worker.enabled: true` outside mode `worker` throws a JobsError. Each app built from the module
   * gets a schema (and, by default, a ManualClock) of its own.
   */
  static forRoot(options: JobsTestingOptions = {}): DynamicModule {
    // Checked at the call; each app made from this module then resolves its own schema and
    // clock, so apps compiled from one module definition (beforeEach) never share a schema.
    resolveTestingSettings(options);
    return build(
      { provide: JOBS_TESTING_SETTINGS, useFactory: () => resolveTestingSettings(options) },
      [],
      options.isGlobal ?? true,
    );
  }

  /**
   * The testing module with options built at start by `useFactory`, global unless `isGlobal: false`.
   * Missing options, an unknown key or no `useFactory` throws a JobsError at the call; what the
   * factory returns is checked at start, as `forRoot()`'s options are.
   */
  static forRootAsync(options: JobsTestingAsyncOptions): DynamicModule {
    const example = 'forRootAsync({ inject: [DataSource], useFactory: (dataSource) => ({ dataSource }) })';
    checkOptions('JobsTestingModule.forRootAsync()', options, example, TESTING_ASYNC_SHAPE);
    if (!options || typeof options.useFactory !== 'function') {
      throw new JobsError(
        'JobsTestingModule.forRootAsync() needs useFactory. Potential fix: forRootAsync({ inject: [DataSource], useFactory: (dataSource) => ({ dataSource }) }).',
      );
    }
    const settings: Provider = {
      provide: JOBS_TESTING_SETTINGS,
      inject: options.inject ?? [],
      useFactory: async (...args: unknown[]) => resolveTestingSettings(await options.useFactory(...args), true),
    };
    return build(settings, options.imports ?? [], options.isGlobal ?? true);
  }
}

function build(settings: Provider, imports: NonNullable<DynamicModule['imports']>, isGlobal: boolean): DynamicModule {
  // JobsModule's own dynamic module is the base, so a test app wires exactly what production does.
  const base = JobsModule.forRootAsync({
    isGlobal,
    inject: [JOBS_TESTING_SETTINGS],
    useFactory: (s: JobsTestingSettings): JobsModuleOptions => s.jobs,
  });
  return {
    module: JobsTestingModule,
    global: isGlobal,
    imports: [...(base.imports ?? []), ...imports],
    providers: [settings, ...tapStorage(base.providers ?? []), StorageTap, JobDrainer, JobsTester, TestSchema],
    exports: [...(base.exports ?? []), JobsTester],
  };
}

/**
 * Puts the StorageTap between the storage and its users: the provider
 * JobsModule declares for each storage token moves to a token of ours, and
 * the token itself gets the tapped storage (the plain one in mode 'worker',
 * which runs exactly as in production).
 */
function tapStorage(providers: Provider[]): Provider[] {
  const moved = (token: InjectionToken, to: symbol) => {
    const original = providers.find((p) => typeof p === 'object' && 'provide' in p && p.provide === token);
    if (!original || typeof original !== 'object') {
      throw new JobsError(
        `JobsTestingModule: JobsModule no longer declares a provider for ${String(token)}. Potential fix: update lib/testing/jobs-testing.module.ts to how JobsModule wires storage now.`,
      );
    }
    return { ...original, provide: to } as Provider;
  };
  const tapped = (token: InjectionToken, untapped: symbol, tap: (storage: never, t: StorageTap) => unknown) => ({
    provide: token,
    inject: [untapped, StorageTap, JOBS_TESTING_SETTINGS],
    useFactory: (storage: never, t: StorageTap, s: JobsTestingSettings) =>
      s.mode === 'worker' ? storage : tap(storage, t),
  });
  const tokens: InjectionToken[] = [ENQUEUE_STORAGE, JOB_CONTROL_STORAGE, WORKFLOW_STORAGE];
  return [
    ...providers.filter((p) => !(typeof p === 'object' && 'provide' in p && tokens.includes(p.provide))),
    moved(ENQUEUE_STORAGE, UNTAPPED_ENQUEUE_STORAGE),
    moved(JOB_CONTROL_STORAGE, UNTAPPED_CONTROL_STORAGE),
    moved(WORKFLOW_STORAGE, UNTAPPED_WORKFLOW_STORAGE),
    tapped(ENQUEUE_STORAGE, UNTAPPED_ENQUEUE_STORAGE, (storage: EnqueueStorage, t) => tapEnqueueStorage(storage, t)),
    tapped(JOB_CONTROL_STORAGE, UNTAPPED_CONTROL_STORAGE, (storage: JobControlStorage, t) =>
      tapControlStorage(storage, t),
    ),
    tapped(WORKFLOW_STORAGE, UNTAPPED_WORKFLOW_STORAGE, (storage: WorkflowStorage, t) =>
      tapWorkflowStorage(storage, t),
    ),
  ];
}
