import type { EntityManager, DataSource } from 'typeorm';
import { StorageFailure } from '../../model/index.js';
import { managerDataSource } from '../../model/entity-manager.js';
import type { StorageTx, TxScope } from './storage-tx.interface.js';
import { pgPoolOf } from './pg-driver.js';
import { poolerRefusal } from './pooler-errors.js';
import { sessionSettingsFor, type SessionSettings } from './session-settings.js';

/** The part of a `pg` client or pool that storage uses. */
interface PgQueryable {
  query(config: {
    text: string;
    values?: unknown[];
    name?: string;
    query_timeout?: number;
  }): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** Client-side limits on waiting for PostgreSQL (0: none), and how the session's settings are applied. */
interface ExecutorLimits {
  queryMs: number;
  connectMs: number;
  session?: SessionSettings;
}

const DIRECT = sessionSettingsFor(null);
const NO_LIMITS: ExecutorLimits = { queryMs: 0, connectMs: 0 };

/**
 * An error after which a connection cannot be trusted: anything but an
 * error response from the server (which has a SQLSTATE code). A timed-out
 * query may still be running on it, and its answer would reach the next one.
 */
function breaksConnection(error: unknown): boolean {
  return !(
    typeof (error as { code?: unknown })?.code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code)
  );
}

function config(text: string, values: unknown[] | undefined, name: string | undefined, limits: ExecutorLimits) {
  const c: { text: string; values?: unknown[]; name?: string; query_timeout?: number } = { text, values };
  if (name && (limits.session ?? DIRECT).namedStatements) c.name = name;
  if (limits.queryMs) c.query_timeout = limits.queryMs;
  return c;
}

/** Runs one query on a client, a pooler's refusal of a named statement turned into the JobsError that names the fix. */
async function send(
  client: PgQueryable,
  text: string,
  values: unknown[] | undefined,
  name: string | undefined,
  limits: ExecutorLimits,
) {
  try {
    return await client.query(config(text, values, name, limits));
  } catch (error) {
    throw poolerRefusal(error) ?? error;
  }
}

/**
 * Runs SQL on the `pg` driver underneath TypeORM: either the pool (the hot
 * path, no entity hydration, named prepared statements) or the connection of
 * a transaction. Private to storage: other layers hold a `TxScope`.
 */
export interface SqlExecutor {
  query<T = Record<string, unknown>>(text: string, values?: unknown[], name?: string): Promise<T[]>;
  /** Runs `fn` in a transaction: a new one on the pool, or the one this executor is in. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
}

interface PgPoolClient extends PgQueryable {
  release(err?: Error | boolean): void;
  on(event: 'error', listener: (err: Error) => void): unknown;
  removeListener(event: 'error', listener: (err: Error) => void): unknown;
}

/**
 * A checked-out client's 'error' events (a server shutting down sends a
 * FATAL to every session) have no listener in pg's pool while we hold it,
 * and an unheard 'error' event ends the process. The query in flight gets
 * the same error as its rejection; this only keeps the event from crashing.
 */
export const ignoreError = (): void => undefined;

/** Whether `client` writes each query without waiting for the answers before it (pg's `pipeline` option). */
function pipelines(client: PgPoolClient): boolean {
  return (client as { pipeline?: unknown }).pipeline === true;
}

/** Back to the pool, or destroyed with `error`; a destroyed client keeps ignoring its socket's last errors. */
function release(client: PgPoolClient, error?: Error): void {
  if (!error) client.removeListener('error', ignoreError);
  client.release(error);
}

class ClientExecutor implements SqlExecutor {
  constructor(
    private readonly client: PgQueryable,
    private readonly limits: ExecutorLimits = NO_LIMITS,
  ) {}
  async query<T>(text: string, values?: unknown[], name?: string): Promise<T[]> {
    const res = await send(this.client, text, values, name, this.limits);
    return res.rows as T[];
  }
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return fn(this);
  }
}

type PgPool = PgQueryable & { connect(): Promise<PgPoolClient> };

export class PoolExecutor implements SqlExecutor {
  private readonly pool: PgPool;

  /**
   * TypeORM's own pool of a DataSource, or a pool of ours. `limits` bound
   * the wait for a connection and for each answer on pools whose own
   * settings may not (the app's DataSource is configured by the app).
   */
  constructor(
    source: DataSource | PgPool,
    private readonly limits: ExecutorLimits = NO_LIMITS,
  ) {
    this.pool = 'driver' in source ? (pgPoolOf(source) as unknown as PgPool) : source;
  }

  get executorLimits(): ExecutorLimits {
    return this.limits;
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.inTransaction(await this.connect(), fn);
  }

  private async inTransaction<T>(client: PgPoolClient, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const tx = new ClientExecutor(client, this.limits);
    try {
      await tx.query((this.limits.session ?? DIRECT).begin);
      const result = await fn(tx);
      await tx.query('COMMIT');
      release(client);
      return result;
    } catch (error) {
      const rolledBack = await tx.query('ROLLBACK').then(
        () => true,
        () => false,
      );
      release(client, rolledBack && !breaksConnection(error) ? undefined : (error as Error));
      throw error;
    }
  }

  async query<T>(text: string, values?: unknown[], name?: string): Promise<T[]> {
    // Behind a transaction pooler a lone statement carries its settings in a transaction of its own.
    const session = this.limits.session;
    if (session?.wrapsStatements) return this.alone<T>(session, text, values, name);
    const client = await this.connect();
    try {
      const res = await send(client, text, values, name, this.limits);
      release(client);
      return res.rows as T[];
    } catch (error) {
      // Destroyed rather than pooled: a query that timed out may still be running on it.
      release(client, breaksConnection(error) ? (error as Error) : undefined);
      throw error;
    }
  }

  /**
   * A lone statement in a transaction of its own that opens with `session`'s
   * settings. On a pipelining client (the worker's pool) BEGIN, the statement
   * and COMMIT go out together: one round trip instead of three, where each
   * costs a hop through the pooler. A statement that fails leaves the
   * transaction aborted, and the COMMIT sent behind it ends it as a rollback,
   * so the connection goes back to the pool idle either way.
   */
  private async alone<T>(
    session: SessionSettings,
    text: string,
    values: unknown[] | undefined,
    name: string | undefined,
  ): Promise<T[]> {
    const client = await this.connect();
    if (!pipelines(client)) return this.inTransaction(client, (tx) => tx.query<T>(text, values, name));
    const [begun, done, committed] = await Promise.allSettled([
      client.query({ text: session.begin }),
      send(client, text, values, name, this.limits),
      client.query({ text: 'COMMIT' }),
    ]);
    // The first failure in the order sent is the cause; the client is destroyed if any of them broke it.
    const failures = [begun, done, committed].flatMap((step) =>
      step.status === 'rejected' ? [step.reason as Error] : [],
    );
    const broken = failures.find(breaksConnection);
    release(client, broken);
    if (failures.length) throw failures[0];
    return (done as PromiseFulfilledResult<{ rows: unknown[] }>).value.rows as T[];
  }

  /** A pooled client, or an error once `connectMs` has passed (the pool's own limit may be none). */
  private async connect(): Promise<PgPoolClient> {
    const client = await this.connectWithin(this.limits.connectMs);
    client.on('error', ignoreError);
    return client;
  }

  private connectWithin(ms: number): Promise<PgPoolClient> {
    if (!ms) return this.pool.connect();
    return new Promise((resolve, reject) => {
      let late = false;
      const timer = setTimeout(() => {
        late = true;
        reject(new StorageFailure(`no database connection within ${ms} ms (timeouts.connect)`));
      }, ms);
      this.pool.connect().then(
        (client) => {
          clearTimeout(timer);
          // Arrived after we gave up: back to the pool, not leaked.
          if (late) client.release();
          else resolve(client);
        },
        (error: unknown) => {
          clearTimeout(timer);
          if (!late) reject(error as Error);
        },
      );
    });
  }
}

/**
 * Uses the transaction's own connection. Going through the query runner's
 * `pg` client (instead of `manager.query`) keeps one result shape for every
 * statement kind; TypeORM 1.x returns `[rows, count]` for UPDATE … RETURNING.
 */
class ManagerExecutor implements SqlExecutor {
  constructor(
    private readonly manager: EntityManager,
    private readonly limits: ExecutorLimits,
  ) {}

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const runner = this.manager.queryRunner;
    if (runner?.isReleased) return Promise.reject(transactionEnded());
    // Inside the caller's transaction already: join it rather than nest.
    if (runner?.isTransactionActive) return fn(this);
    return new PoolExecutor(managerDataSource(this.manager), this.limits).transaction(fn);
  }

  async query<T>(text: string, values?: unknown[], name?: string): Promise<T[]> {
    const runner = this.manager.queryRunner;
    // A manager outside any transaction (dataSource.manager) has nothing to join: use the pool.
    if (!runner) return new PoolExecutor(managerDataSource(this.manager), this.limits).query<T>(text, values, name);
    if (runner.isReleased) throw transactionEnded();
    const client = (await runner.connect()) as PgQueryable;
    const res = await send(client, text, values, name, this.limits);
    return res.rows as T[];
  }
}

/**
 * A manager's query runner is released when its transaction ended, and also
 * (by TypeORM, on the connection's error) when its connection failed in the
 * middle of it: what the caller wrote in it is gone then. Writing on the pool
 * instead would commit this write without them.
 */
function transactionEnded(): StorageFailure {
  return new StorageFailure(
    "the EntityManager's transaction has ended (committed or rolled back, or its connection failed), so nothing was written outside it",
  );
}

/**
 * The executor a write runs on: the scope's transaction, or `fallback` (a
 * pool) outside one; a caller's manager gets the fallback's limits.
 */
export function executorFor(scope: TxScope | undefined, fallback: PoolExecutor): SqlExecutor {
  if (!scope) return fallback;
  // A StorageTx is one of our executors handed out by transaction(); anything else is a manager.
  if (scope instanceof ClientExecutor || scope instanceof ManagerExecutor || scope instanceof PoolExecutor) {
    return scope;
  }
  return new ManagerExecutor(scope as EntityManager, fallback.executorLimits);
}

/** What underSavepoint answers when it rolled `fn` back. */
export const UNDONE = Symbol('undone');

/**
 * Runs `fn` under a savepoint of `executor`'s transaction. An error that
 * `undo` accepts rolls the savepoint back and answers UNDONE, and the
 * transaction goes on; any other is thrown. The savepoint is released either
 * way, so a long transaction does not pile up subtransactions.
 */
export async function underSavepoint<T>(
  executor: SqlExecutor,
  name: string,
  fn: () => Promise<T>,
  undo: (error: unknown) => boolean,
): Promise<T | typeof UNDONE> {
  await executor.query(`SAVEPOINT ${name}`);
  try {
    const value = await fn();
    await executor.query(`RELEASE SAVEPOINT ${name}`);
    return value;
  } catch (error) {
    if (!undo(error)) throw error;
    await executor.query(`ROLLBACK TO SAVEPOINT ${name}`);
    await executor.query(`RELEASE SAVEPOINT ${name}`);
    return UNDONE;
  }
}

/** Hands an executor to code outside storage as the opaque handle it passes back. */
export function asStorageTx(executor: SqlExecutor): StorageTx {
  return executor as unknown as StorageTx;
}

/**
 * Runs reads that must agree with each other (a job row and its history) in
 * one read-only snapshot: side by side on the pool, each would see its own
 * moment, and a job that moved on between them would read as failed with
 * the failed attempt missing from its history.
 */
export function inOneSnapshot<T>(executor: SqlExecutor, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
  return executor.transaction(async (tx) => {
    await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    return fn(tx);
  });
}
