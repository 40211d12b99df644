import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { Injectable, type INestApplication } from '@nestjs/common';
import {
  BatchBuilder,
  Job,
  JobQueue,
  JobsError,
  type JobCallHandler,
  type JobContext,
  type JobHandler,
  type JobInterceptor,
  type JobInterceptorContext,
  type JobsModuleOptions,
} from 'nestjs-durable-jobs';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

// A job's context (ctx.context): given at enqueue or read from JobsModule's contextFrom, restored by
// an interceptor, copied to the jobs a job starts (continuations, workflow successors, batch
// additions, enqueues from its handler), sealed with an encrypted job, and refused at the call site
// when it is not a small JSON object.

/** The app's request store, as nestjs-cls or a middleware's AsyncLocalStorage would be. */
const requests = new AsyncLocalStorage<Record<string, unknown>>();

/** What each job saw: its context, the tenant in the app's store, and its parents. */
interface Sighting {
  context: Readonly<Record<string, unknown>>;
  tenant: unknown;
  frozen: boolean;
  parentIds: readonly string[];
}

@Injectable()
class Seen {
  readonly byId = new Map<string, Sighting>();
  note(ctx: JobContext): void {
    this.byId.set(ctx.jobId, {
      context: ctx.context,
      tenant: requests.getStore()?.tenantId ?? null,
      frozen: Object.isFrozen(ctx.context),
      parentIds: ctx.parentIds,
    });
  }
  /** The one job that ran after `parentId`. */
  childOf(parentId: string): Sighting | undefined {
    return [...this.byId.values()].find((s) => s.parentIds.includes(parentId));
  }
}

/** The tenant example's interceptor: the tenant the job was enqueued for is the request's again. */
@Injectable()
class RestoreTenant implements JobInterceptor {
  intercept(ctx: JobInterceptorContext, next: JobCallHandler): Promise<unknown> {
    const { tenantId } = ctx.context;
    return typeof tenantId === 'string' ? requests.run({ tenantId }, next) : next();
  }
}

@Job('cx-record')
class Record_ implements JobHandler<object> {
  constructor(private readonly seen: Seen) {}
  run(_: object, ctx: JobContext): void {
    this.seen.note(ctx);
  }
}

/** Runs a function outside every AsyncLocalStorage context (as a callback registered at start would). */
const outside = AsyncLocalStorage.snapshot();

type Mode =
  'continue' | 'continue-detached' | 'continue-own' | 'enqueue' | 'enqueue-own' | 'enqueue-none' | 'add' | 'nothing';

@Job('cx-parent')
class Parent implements JobHandler<{ mode: Mode }> {
  constructor(
    private readonly seen: Seen,
    private readonly queue: JobQueue,
  ) {}
  async run({ mode }: { mode: Mode }, ctx: JobContext): Promise<{ child?: string }> {
    this.seen.note(ctx);
    // Across an await: what the handler enqueues later still inherits.
    await new Promise((resolve) => setTimeout(resolve, 2));
    switch (mode) {
      case 'continue':
        ctx.continueWith(Record_, {});
        return {};
      case 'continue-detached':
        // Staged where no store is open: the continuation inherits from ctx itself, not from the store.
        outside(() => ctx.continueWith(Record_, {}));
        return {};
      case 'continue-own':
        ctx.continueWith(Record_, {}, { context: { tenantId: 't-own' } });
        return {};
      case 'enqueue':
        return { child: (await this.queue.enqueue(Record_, {})).id };
      case 'enqueue-own':
        return { child: (await this.queue.enqueue(Record_, {}, { context: { tenantId: 't-own' } })).id };
      case 'enqueue-none':
        return { child: (await this.queue.enqueue(Record_, {}, { context: null })).id };
      case 'add':
        return { child: (await ctx.addToBatch(Record_, {})).id };
      default:
        return {};
    }
  }
}

/** In a queue with a concurrency limit: claimed by the controlled claim. */
@Job('cx-limited', { queue: 'cx-limited' })
class Limited implements JobHandler<object> {
  constructor(private readonly seen: Seen) {}
  async run(_: object, ctx: JobContext): Promise<void> {
    this.seen.note(ctx);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

@Job('cx-fails', { maxAttempts: 1 })
class Fails implements JobHandler<object> {
  readonly hooks = new Map<string, Readonly<Record<string, unknown>>>();
  run(): void {
    throw new Error('no');
  }
  onFailure(_: object, __: Error, ctx: JobContext): void {
    this.hooks.set(ctx.jobId, ctx.context);
  }
}

@Job('cx-secret', { encrypted: true })
class Secret implements JobHandler<object> {
  constructor(private readonly seen: Seen) {}
  run(_: object, ctx: JobContext): void {
    this.seen.note(ctx);
  }
}

const MARKER = 'marker-5d1c-tenant@example.com';
const K1 = randomBytes(32).toString('base64');

const schemas: string[] = [];
const apps: INestApplication[] = [];

async function boot(options: Partial<JobsModuleOptions> = {}, handlers: unknown[] = [Record_, Parent, Limited, Fails]) {
  const schema = uniqueSchema('jctx');
  schemas.push(schema);
  const app = await startJobsApp(
    schema,
    {
      worker: { concurrency: 10, pollInterval: 50 },
      interceptors: [RestoreTenant],
      contextFrom: () => requests.getStore(),
      queues: { 'cx-limited': { concurrency: 2 } },
      ...options,
    },
    { providers: [Seen, RestoreTenant, ...handlers] as never[] },
  );
  apps.push(app);
  return { app, schema, queue: app.get(JobQueue), batches: app.get(BatchBuilder), seen: app.get(Seen) };
}

type Booted = Awaited<ReturnType<typeof boot>>;
let main: Booted;

beforeAll(async () => {
  main = await boot();
});

afterAll(async () => {
  for (const app of apps) await app.close().catch(() => undefined);
  await dropSchemas(...schemas);
});

const seenRun = (id: string) => waitFor(`job ${id} to run`, () => main.seen.byId.get(id));
const childRun = (parent: string) => waitFor(`the child of ${parent} to run`, () => main.seen.childOf(parent));
const jobCount = async (schema: string) =>
  (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".job`))[0]!.n;

describe('job context', () => {
  it('given at enqueue: the handler reads it frozen as ctx.context, get() shows it; none reads as {}', async () => {
    const context = { tenantId: 't-1', user: { id: 'u-1', roles: ['admin'] } };
    const { id } = await main.queue.enqueue(Record_, {}, { context });
    const seen = await seenRun(id);
    expect(seen.context).toEqual(context);
    expect(seen.frozen).toBe(true);
    expect(Object.isFrozen(seen.context.user)).toBe(true);
    expect((await main.queue.get(id))!.context).toEqual(context);

    const none = await main.queue.enqueue(Record_, {});
    expect((await seenRun(none.id)).context).toEqual({});
    expect((await main.queue.get(none.id))!.context).toEqual({});
  });

  it("captured by default from contextFrom at the call (a request's tenant); context: null opts out", async () => {
    const [captured, optedOut, own] = await requests.run({ tenantId: 't-req', requestId: 'r-9' }, () =>
      Promise.all([
        main.queue.enqueue(Record_, {}),
        main.queue.enqueue(Record_, {}, { context: null }),
        main.queue.enqueue(Record_, {}, { context: { tenantId: 't-mine' } }),
      ]),
    );
    expect((await seenRun(captured.id)).context).toEqual({ tenantId: 't-req', requestId: 'r-9' });
    expect((await seenRun(optedOut.id)).context).toEqual({});
    expect((await seenRun(own.id)).context).toEqual({ tenantId: 't-mine' });

    // Read once per enqueueMany, for every item without its own.
    const many = await requests.run({ tenantId: 't-many' }, () =>
      main.queue.enqueueMany([
        { job: Record_, payload: {} },
        { job: Record_, payload: {}, options: { context: { tenantId: 't-item' } } },
      ]),
    );
    expect((await seenRun(many[0]!.id)).context).toEqual({ tenantId: 't-many' });
    expect((await seenRun(many[1]!.id)).context).toEqual({ tenantId: 't-item' });
  });

  it('the tenant example: enqueued in a request, restored by the interceptor, the same for its children', async () => {
    // In a request: no context passed, contextFrom captures the tenant.
    const [continued, enqueued] = await requests.run({ tenantId: 't-acme' }, () =>
      Promise.all([main.queue.enqueue(Parent, { mode: 'continue' }), main.queue.enqueue(Parent, { mode: 'enqueue' })]),
    );
    for (const { id } of [continued, enqueued]) {
      const parent = await seenRun(id);
      expect(parent.context).toEqual({ tenantId: 't-acme' });
      // The interceptor made the request's store hold the tenant again, for the handler's own code.
      expect(parent.tenant).toBe('t-acme');
    }
    const continuation = await childRun(continued.id);
    expect(continuation).toMatchObject({ context: { tenantId: 't-acme' }, tenant: 't-acme' });
    const child = (await main.queue.get(enqueued.id))!.result as { child: string };
    expect(await seenRun(child.child)).toMatchObject({ context: { tenantId: 't-acme' }, tenant: 't-acme' });
  });

  it('read by jobs of a limited queue (the controlled claim) and by onFailure', async () => {
    const ids = await Promise.all(
      Array.from({ length: 6 }, (_, i) => main.queue.enqueue(Limited, {}, { context: { tenantId: `t-l${i}` } })),
    );
    for (const [i, { id }] of ids.entries()) expect((await seenRun(id)).context).toEqual({ tenantId: `t-l${i}` });

    const failing = await main.queue.enqueue(Fails, {}, { context: { tenantId: 't-hook' } });
    const hooks = main.app.get(Fails).hooks;
    expect(await waitFor('the hook to run', () => hooks.get(failing.id))).toEqual({ tenantId: 't-hook' });
  });

  it("a job enqueued from a handler takes the running job's whole context (not what contextFrom reads there)", async () => {
    // The interceptor restores the tenant only: contextFrom inside the handler would read { tenantId }.
    const context = { tenantId: 't-2', userId: 'u-2' };
    const { id } = await main.queue.enqueue(Parent, { mode: 'enqueue' }, { context });
    await seenRun(id);
    const { child } = (await waitFor('the parent to succeed', async () => {
      const info = await main.queue.get(id);
      return info?.state === 'succeeded' ? info : null;
    }))!.result as { child: string };
    expect((await seenRun(child)).context).toEqual(context);
  });

  it('copied to a continuation and a batch addition; a call of its own replaces it', async () => {
    const context = { tenantId: 't-3', userId: 'u-3' };
    const cont = await main.queue.enqueue(Parent, { mode: 'continue' }, { context });
    expect((await childRun(cont.id)).context).toEqual(context);
    const detached = await main.queue.enqueue(Parent, { mode: 'continue-detached' }, { context });
    expect((await childRun(detached.id)).context).toEqual(context);

    const contOwn = await main.queue.enqueue(Parent, { mode: 'continue-own' }, { context });
    expect((await childRun(contOwn.id)).context).toEqual({ tenantId: 't-own' });

    const own = await main.queue.enqueue(Parent, { mode: 'enqueue-own' }, { context });
    const none = await main.queue.enqueue(Parent, { mode: 'enqueue-none' }, { context });
    for (const [parent, expected] of [
      [own.id, { tenantId: 't-own' }],
      [none.id, {}],
    ] as const) {
      const info = await waitFor('the parent to succeed', async () => {
        const job = await main.queue.get(parent);
        return job?.state === 'succeeded' ? job : null;
      });
      expect((await seenRun((info.result as { child: string }).child)).context).toEqual(expected);
    }

    // A batch member's context comes from contextFrom at dispatch; what it adds to the batch carries it on.
    const batch = await requests.run({ tenantId: 't-batch' }, () =>
      main.batches.create('cx').add(Parent, { mode: 'add' }).then(Record_, {}).dispatch(),
    );
    const members = await waitFor('the batch to succeed', async () => {
      const status = await main.queue.batchStatus(batch.id);
      return status?.state === 'succeeded' ? main.queue.batchMembers(batch.id) : null;
    });
    expect(members).toHaveLength(2);
    for (const m of members) expect((await seenRun(m.id)).context).toEqual({ tenantId: 't-batch' });
  });

  it("copied to chain and flow successors; a step's own replaces it; parents that differ are refused", async () => {
    const context = { tenantId: 't-4' };
    const chain = await main.queue
      .chain()
      .then(Record_, {}, { context })
      .then(Record_, {})
      .then(Record_, {}, { context: { tenantId: 't-own' } })
      .then(Record_, {})
      .dispatch();
    const chained = await Promise.all(chain.ids.map(seenRun));
    expect(chained.map((s) => s.context)).toEqual([context, context, { tenantId: 't-own' }, { tenantId: 't-own' }]);

    const flow = await main.queue
      .flow()
      .add('a', Record_, {}, { context })
      .add('b', Record_, {}, { after: ['a'] })
      .add('c', Record_, {}, { after: ['a'] })
      .add('d', Record_, {}, { after: ['b', 'c'] })
      .dispatch();
    for (const key of ['a', 'b', 'c', 'd']) expect((await seenRun(flow.ids[key]!)).context).toEqual(context);

    // Two parents with different contexts: which one the join inherits is unclear.
    const before = await jobCount(main.schema);
    await expect(
      main.queue
        .flow()
        .add('a', Record_, {}, { context: { tenantId: 't-a' } })
        .add('b', Record_, {}, { context: { tenantId: 't-b' } })
        .add('join', Record_, {}, { after: ['a', 'b'] })
        .dispatch(),
    ).rejects.toThrow(/step "join" waits on "a" and "b", whose contexts differ.*"context".*Potential fix/);
    expect(await jobCount(main.schema)).toBe(before);
  });

  it('bad input: not a plain JSON object, or over 8 KiB, is a JobsError at the call; nothing of a batch is written', async () => {
    const bad: Array<[unknown, RegExp]> = [
      [['t-1'], /enqueue\('cx-record'\): "context" must be a plain object, got an array/],
      ['t-1', /enqueue\('cx-record'\): "context" must be a plain object, got the string "t-1"/],
      [new Date(), /"context" must be a plain object, got the Date/],
      [new (class Tenant {})(), /"context" must be a plain object, got an object \(an instance of Tenant\)/],
      [{ at: new Date() }, /enqueue\('cx-record'\): "context" is not JSON at \$\.at \(a Date/],
      [{ n: 1n }, /"context" is not JSON at \$\.n \(a BigInt\)/],
      [
        { big: 'x'.repeat(9000) },
        /enqueue\('cx-record'\): "context" is 9\d\d\d bytes of JSON, over its bound of 8192.*Potential fix: keep ids/,
      ],
    ];
    const before = await jobCount(main.schema);
    for (const [context, message] of bad) {
      const error = (await main.queue.enqueue(Record_, {}, { context: context as never }).catch((e) => e)) as Error;
      expect(error).toBeInstanceOf(JobsError);
      expect(error.message).toMatch(message);
    }
    // Within its bound: just under 8 KiB is taken.
    await main.queue.enqueue(Record_, {}, { context: { fits: 'x'.repeat(8000) } });

    await expect(
      main.queue.enqueueMany([
        { job: Record_, payload: {} },
        { job: Record_, payload: {}, options: { context: ['no'] as never } },
      ]),
    ).rejects.toThrow(/enqueue\('cx-record'\): "context" must be a plain object/);
    await expect(
      main.batches
        .create('bad')
        .add(Record_, {})
        .add(Record_, {}, { context: { at: new Date() } as never })
        .dispatch(),
    ).rejects.toThrow(/"context" is not JSON at \$\.at/);
    // What contextFrom returns is checked as a call's own.
    await expect(requests.run({ tenantId: 1n } as never, () => main.queue.enqueue(Record_, {}))).rejects.toThrow(
      /enqueue\('cx-record'\) \(the default context\): "context" is not JSON at \$\.tenantId \(a BigInt\)/,
    );
    expect(await jobCount(main.schema)).toBe(before + 1);
    const batches = await sql(`SELECT id FROM "${main.schema}".job_batch WHERE name = 'bad'`);
    expect(batches).toEqual([]);
  });
});

describe('job context of an encrypted job', () => {
  let secret: Booted;
  beforeAll(async () => {
    secret = await boot({ encryption: { keys: { k1: K1 }, current: 'k1' } }, [Secret]);
  });

  it('is sealed in the table, yet the handler and get() read it', async () => {
    const context = { tenantId: 't-5', email: MARKER };
    const { id } = await secret.queue.enqueue(Secret, {}, { context });
    const [raw] = await sql<{ kind: string; text: string }>(
      `SELECT jsonb_typeof(context) AS kind, context #>> '{}' AS text FROM "${secret.schema}".job WHERE id = $1`,
      [id],
    );
    expect(raw!.kind).toBe('string');
    expect(raw!.text).toMatch(/^\$enc1:k1:/);
    expect(raw!.text).not.toContain(MARKER);
    expect((await waitFor('the secret job to run', () => secret.seen.byId.get(id))).context).toEqual(context);
    expect((await secret.queue.get(id))!.context).toEqual(context);
  });
});
