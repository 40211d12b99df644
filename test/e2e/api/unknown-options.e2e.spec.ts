import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import fc from 'fast-check';
import {
  Job,
  JobQueue,
  JOBS_DATA_SOURCE,
  JobsError,
  JobsModule,
  JobEvents,
  type JobsOptionsFactory,
} from 'nestjs-durable-jobs';
import { JobsTestingModule, ManualClock } from 'nestjs-durable-jobs/testing';
import type { DataSource } from 'typeorm';
import { databaseUrl, dropSchemas, uniqueSchema } from '../../support/database.js';
import { RowCounter } from '../../support/hostile-input.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { decoratorPositions, JOB, MODULE, modulePositions, WORKER } from '../../support/option-positions.js';
import {
  kitPositions,
  operatorPositions,
  queuePositions,
  TESTING,
  UUID,
} from '../../support/option-positions-calls.js';
import { Echo, T0 } from '../../support/property-jobs.js';
import { startTestingApp, type TestingApp } from '../../support/testing-app.js';
import { anyValue, expectUnknownKeyRefused, unknownKey, type OptionsPosition } from '../../support/unknown-keys.js';

// A typo in an option (`maxAtempts`), or an option this version does not
// have (`sandboxed`), dropped without a word would leave the job running with
// the default it was meant to override. Every options object of the public
// API refuses a key it does not know, at the call (or the decorator, or the
// start), naming it and the key meant.
// One app with the worker and the scheduler off, so only the call under
// test could move a row count; one testing-kit app for the kit's calls.

const clock = new ManualClock(T0);
const schema = uniqueSchema('unknown');
const counter = new RowCounter(schema);
let app: INestApplication;
let kit: TestingApp;
let kitCounter: RowCounter;

beforeAll(async () => {
  app = await startJobsApp(
    schema,
    { clock, worker: { enabled: false }, scheduler: { enabled: false }, queues: { emails: { concurrency: 2 } } },
    { providers: [Echo] },
  );
  await counter.open();
  kit = await startTestingApp();
  kitCounter = new RowCounter(kit.tester.schema);
  await kitCounter.open();
});

afterAll(async () => {
  await counter.close();
  await kitCounter?.close();
  await app?.close();
  await kit?.app.close();
  await dropSchemas(schema);
});

const label = (p: OptionsPosition) => `${p.where}${p.path ? ` at "${p.path.slice(0, -1)}"` : ''}`;
const RUNS = { numRuns: 40 };
const jobs = () => app.get(JobQueue);

/** Each position under generated unknown keys, a property of its own so a failure names it. */
function refusesUnknownKeys(positions: OptionsPosition[], rows: () => RowCounter) {
  it.each(positions.map((p) => [label(p), p] as const))('%s', async (_label, position) => {
    await fc.assert(
      fc.asyncProperty(unknownKey(position), anyValue, (key, value) =>
        expectUnknownKeyRefused(rows(), position, key, value),
      ),
      RUNS,
    );
  });
}

describe('JobsModule and the dashboard refuse an unknown option, nested ones included, at the call', () => {
  refusesUnknownKeys(modulePositions, () => counter);
});

describe('the decorators and JobEvents refuse an unknown option when they are applied', () => {
  refusesUnknownKeys(
    decoratorPositions(() => app.get(JobEvents)),
    () => counter,
  );
});

describe('JobQueue, batches, flows, chains, JobQueues and RecurringSchedules refuse it and write nothing', () => {
  refusesUnknownKeys(
    queuePositions(() => app),
    () => counter,
  );
});

describe("JobsAdmin's, JobsMonitor's and the health check's filters and options refuse it", () => {
  refusesUnknownKeys(
    operatorPositions(() => app),
    () => counter,
  );
});

describe("the testing kit's options and calls refuse it", () => {
  refusesUnknownKeys(
    kitPositions(() => kit.tester),
    () => kitCounter,
  );
});

describe('what a forRootAsync factory returns is checked at the start', () => {
  /** Boots JobsModule on options a factory returns; the start must fail before a connection opens. */
  async function boot(imports: unknown[]): Promise<void> {
    const ref = await Test.createTestingModule({ imports: imports as never[] }).compile();
    const booted = ref.createNestApplication({ logger: false });
    try {
      await booted.init();
    } finally {
      await booted.close();
    }
  }
  // migrationsRun false on a schema nobody made: a factory result taken by mistake fails the start
  // with another message, and leaves no schema behind.
  const valid = () => ({ connection: databaseUrl(), schema: uniqueSchema('never'), migrationsRun: false });
  const factoryPositions: OptionsPosition[] = [
    {
      where: 'JobsModule.forRootAsync(): the options useFactory returned',
      known: MODULE,
      refusedOtherwise: ['isGlobal'],
      base: valid,
      call: (o) => boot([JobsModule.forRootAsync({ useFactory: async () => o as never })]),
    },
    {
      where: 'JobsModule.forRootAsync(): the options useFactory returned',
      path: 'worker.',
      known: WORKER,
      call: (o) => boot([JobsModule.forRootAsync({ useFactory: () => ({ ...valid(), worker: o as never }) })]),
    },
    {
      where: 'JobsTestingModule.forRootAsync(): the options useFactory returned',
      known: TESTING,
      refusedOtherwise: ['schema', 'isGlobal'],
      base: () => ({ connection: databaseUrl() }),
      call: (o) => boot([JobsTestingModule.forRootAsync({ useFactory: () => o as never })]),
    },
  ];
  it.each(factoryPositions.map((p) => [label(p), p] as const))('%s', async (_label, position) => {
    await fc.assert(
      fc.asyncProperty(unknownKey(position), anyValue, (key, value) =>
        expectUnknownKeyRefused(counter, position, key, value),
      ),
      { numRuns: 10 },
    );
  });

  it("a factory class's createJobsOptions() result too, and isGlobal, which belongs to the forRootAsync call", async () => {
    class JobsConfig implements JobsOptionsFactory {
      createJobsOptions() {
        return { ...valid(), isGlobal: false } as never;
      }
    }
    await expect(boot([JobsModule.forRootAsync({ useClass: JobsConfig })])).rejects.toThrow(
      /^JobsModule\.forRootAsync\(\): the options JobsConfig\.createJobsOptions\(\) returned: unknown option "isGlobal"\. Known options: dataSource, .* Potential fix: pass it to forRootAsync\(\{ isGlobal, useFactory \}\) itself/,
    );
  });

  it('a factory that returns nothing is refused, rather than starting the embedded database', async () => {
    await expect(boot([JobsModule.forRootAsync({ useFactory: () => undefined as never })])).rejects.toThrow(
      /the options useFactory returned: undefined\. Potential fix: return the options/,
    );
  });
});

describe('misspelt options name the key meant and list the known ones', () => {
  it('@Job with "maxAtempts" names the key meant and lists the known ones', () => {
    expect(() => Job('x', { maxAtempts: 3 } as never)(class X {})).toThrow(
      new JobsError(
        `@Job('x') on class X: unknown option "maxAtempts". Did you mean "maxAttempts"? ` +
          `Known options: ${JOB.join(', ')}. Potential fix: rename it to "maxAttempts".`,
      ),
    );
  });

  it('forRoot with "retension" names "retention"; options of features not in this version are refused as such', () => {
    expect(() => JobsModule.forRoot({ retension: { succeeded: 1 } } as never)).toThrow(
      /^JobsModule\.forRoot\(\): unknown option "retension"\. Did you mean "retention"\?/,
    );
    expect(() => Job('x', { sandboxed: true } as never)(class X {})).toThrow(
      /unknown option "sandboxed"\. Known options: queue, .*Potential fix: remove it; this version of nestjs-durable-jobs has no such option\./,
    );
    expect(() => JobsModule.forRoot({ redisUrl: 'redis://localhost' } as never)).toThrow(
      /unknown option "redisUrl"\. Known options: dataSource, connection/,
    );
  });

  it('a fixed backoff with maxDelay, which it would ignore, and an "after" entry naming a job and a batch', async () => {
    expect(() => Job('x', { backoff: { type: 'fixed', delay: 1, maxDelay: 10 } as never })(class X {})).toThrow(
      /"backoff\.maxDelay" caps an exponential backoff; a fixed one never grows/,
    );
    const before = await counter.counts();
    await expect(jobs().enqueue(Echo, {}, { after: [{ job: UUID, batch: UUID } as never] })).rejects.toThrow(
      /"after" entry 0 names both a job and a batch/,
    );
    expect(await counter.counts()).toEqual(before);
  });
});

describe('what users commonly pass keeps working, or is refused saying what to do instead', () => {
  it("the app's TypeORM config spread into connection: type, entities and migrations are the library's", () => {
    const ormConfig = { type: 'postgres', url: databaseUrl(), entities: [], synchronize: false };
    expect(() => JobsModule.forRoot({ connection: { ...ormConfig } as never })).toThrow(
      /unknown option "connection\.type"\. Known options of "connection": url, host, .*Potential fix: leave it out: the connection the module opens is always postgres.*pass its DataSource as "dataSource" instead\./,
    );
    const { type: _type, entities: _entities, ...settings } = ormConfig;
    expect(() => JobsModule.forRoot({ connection: settings })).not.toThrow();
  });

  it('a DataSource as dataSource and spread options: values are not looked into', async () => {
    const dataSource = app.get<DataSource>(JOBS_DATA_SOURCE);
    expect(dataSource.isInitialized).toBe(true);
    const defaults = { maxAttempts: 5, backoff: { type: 'fixed' as const, delay: 100 } };
    expect(() =>
      JobsModule.forRoot({
        ...{ dataSource, worker: { ...{ concurrency: 2 }, enabled: false } },
        defaults: { ...defaults, timeout: undefined },
        queues: JSON.parse('{"emails":{"concurrency":1,"rateLimit":{"max":1,"per":10}}}') as never,
        externalJobs: ['elsewhere'],
      }),
    ).not.toThrow();
  });

  it("forRootAsync's inputs, and an item's options spread from a call's, with manager and after left undefined", async () => {
    expect(() =>
      JobsModule.forRootAsync({ imports: [], inject: [], isGlobal: false, useFactory: () => ({ connection: 'x' }) }),
    ).not.toThrow();
    const base = { manager: undefined, after: undefined, priority: 2 };
    const before = await counter.counts();
    const [one] = await jobs().enqueueMany([{ job: Echo, payload: 1, options: { ...base } as never }]);
    expect((await jobs().get(one!.id))!.priority).toBe(2);
    expect((await counter.counts()).job).toBe(before.job + 1);
  });
});
