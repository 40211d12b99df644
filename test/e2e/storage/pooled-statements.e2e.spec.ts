import pg from 'pg';
import type { DataSource } from 'typeorm';
import { ownedDataSource } from '../../../lib/storage/connection/connection-options.js';
import { WorkerPool } from '../../../lib/storage/jobs/worker-pool.js';
import { connectionBudget } from '../../../lib/storage/sql/connection-budget.js';
import { ownSessionSettings } from '../../../lib/storage/sql/connection-plan.js';
import { StorageContext } from '../../../lib/storage/sql/storage-context.js';
import { resolveTimeouts } from '../../../lib/storage/sql/timeouts.js';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startPgBouncer, type PgBouncer } from '../../support/pgbouncer.js';

/**
 * The worker's lone statements behind a real PgBouncer in transaction mode: each needs its
 * settings (statement timeout, planner settings) as SET LOCAL in a transaction of its own, and
 * the pool writes BEGIN, the statement and COMMIT together instead of waiting for each answer.
 */

const timeouts = resolveTimeouts({ statement: 4_000 });
const schema = uniqueSchema('pooled_statements');
let bouncer: PgBouncer;
let dataSource: DataSource;
let pool: WorkerPool;
/** What the worker pool's connection wrote and read, in order, from its first statement on. */
const wire: Array<'write' | 'ready'> = [];
const role = `pooled-statements-${process.pid}`;

beforeAll(async () => {
  bouncer = await startPgBouncer({ mode: 'transaction', upstream: databaseUrl() });
  const session = ownSessionSettings('transaction', timeouts);
  dataSource = ownedDataSource({ url: bouncer.url }, timeouts, session, 1);
  await dataSource.initialize();
  const context = new StorageContext(dataSource, schema, timeouts, undefined, undefined, {
    pooler: 'transaction',
    session,
    budget: connectionBudget({ maxConnections: undefined, owned: true, worker: true, listening: false }),
    listen: 'none',
    direct: null,
  });
  pool = new WorkerPool(context, 1, false, role);
  // pg-pool announces each new client once it is connected, so the handshake is not recorded.
  (pool as unknown as { pool: pg.Pool }).pool.on('connect', (client) => {
    const connection = (client as unknown as { connection: { stream: { write: (...a: unknown[]) => boolean } } })
      .connection;
    const write = connection.stream.write.bind(connection.stream);
    connection.stream.write = (...args: unknown[]) => {
      wire.push('write');
      return write(...args);
    };
    (connection as unknown as NodeJS.EventEmitter).on('readyForQuery', () => wire.push('ready'));
  });
  await sql(`CREATE SCHEMA "${schema}"`);
  await sql(`CREATE TABLE "${schema}".t (v int NOT NULL)`);
  await sql(`CREATE TABLE "${schema}".deferred (v int NOT NULL UNIQUE DEFERRABLE INITIALLY DEFERRED)`);
  await sql(`INSERT INTO "${schema}".deferred VALUES (1)`);
});

afterAll(async () => {
  await pool?.close(5_000);
  await dataSource?.destroy();
  await bouncer?.stop();
  await dropSchemas(schema);
});

/** The server sessions of the worker pool (through PgBouncer, which passes application_name on). */
function workerSessions() {
  return sql<{ state: string; in_transaction: boolean }>(
    `SELECT state, xact_start IS NOT NULL AS in_transaction FROM pg_stat_activity WHERE application_name = $1`,
    [`nestjs-durable-jobs ${role}`],
  );
}

describe("the worker pool's lone statements behind a transaction pooler", () => {
  it('go out with their BEGIN, settings and COMMIT in one round trip, and run with the settings', async () => {
    wire.length = 0;
    const [row] = await pool.executor.query<Record<string, string>>(
      `SELECT current_setting('statement_timeout') AS timeout, current_setting('enable_seqscan') AS seqscan,
              current_setting('plan_cache_mode') AS plans`,
    );
    expect(row).toEqual({ timeout: '4s', seqscan: 'off', plans: 'force_generic_plan' });
    // Three answers (BEGIN and the settings, the statement, COMMIT), and nothing written after the first.
    expect(wire.filter((e) => e === 'ready')).toHaveLength(3);
    expect(wire.lastIndexOf('write')).toBeLessThan(wire.indexOf('ready'));
    expect(wire[0]).toBe('write');
  });

  it('leave the server session idle, outside any transaction, with no setting behind', async () => {
    await pool.executor.query('SELECT 1');
    const sessions = await workerSessions();
    expect(sessions.length).toBeGreaterThan(0);
    for (const s of sessions) expect(s).toEqual({ state: 'idle', in_transaction: false });
    // The settings were the transaction's own: a plain client of the same PgBouncer, handed the server
    // session just released (PgBouncer reuses the last one first), sees the server's.
    const plain = new pg.Client({ connectionString: bouncer.url });
    await plain.connect();
    try {
      const { rows } = await plain.query(`SELECT current_setting('enable_seqscan') AS seqscan`);
      expect(rows).toEqual([{ seqscan: 'on' }]);
    } finally {
      await plain.end();
    }
  });

  it('a statement that fails rejects with its own error, writes nothing, and the connection serves the next', async () => {
    await expect(
      pool.executor.query(`WITH w AS (INSERT INTO "${schema}".t VALUES (1) RETURNING v) SELECT 1 / (v - 1) FROM w`),
    ).rejects.toMatchObject({ code: '22012' });
    expect(await sql(`SELECT count(*)::int AS n FROM "${schema}".t`)).toEqual([{ n: 0 }]);
    expect(await pool.executor.query('SELECT 2 AS two')).toEqual([{ two: 2 }]);
    expect(pool.open).toBe(1);
    for (const s of await workerSessions()) expect(s).toEqual({ state: 'idle', in_transaction: false });
  });

  it('a COMMIT that fails rejects the call with its error and keeps nothing of the statement', async () => {
    // The statement's insert succeeds; the deferred unique check fails at COMMIT.
    await expect(pool.executor.query(`INSERT INTO "${schema}".deferred VALUES (1) RETURNING v`)).rejects.toMatchObject({
      code: '23505',
    });
    expect(await sql(`SELECT count(*)::int AS n FROM "${schema}".deferred`)).toEqual([{ n: 1 }]);
    expect(await pool.executor.query('SELECT 3 AS three')).toEqual([{ three: 3 }]);
  });

  it('a transaction of several statements still runs as one, each statement answered in turn', async () => {
    const rows = await pool.executor.transaction(async (tx) => {
      await tx.query(`INSERT INTO "${schema}".t VALUES (5)`);
      return tx.query<{ n: number; seqscan: string }>(
        `SELECT count(*)::int AS n, current_setting('enable_seqscan') AS seqscan FROM "${schema}".t`,
      );
    });
    expect(rows).toEqual([{ n: 1, seqscan: 'off' }]);
    expect(await sql(`SELECT count(*)::int AS n FROM "${schema}".t`)).toEqual([{ n: 1 }]);
  });
});
