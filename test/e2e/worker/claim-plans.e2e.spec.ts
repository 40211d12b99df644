import { Injectable, type INestApplication } from '@nestjs/common';
import { Job, JobQueue, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import pg from 'pg';
import { WORKER_PLANNER_SETTINGS } from '../../../lib/storage/jobs/worker-pool.js';
import { claimStatements } from '../../../lib/storage/jobs/claim/claim-statements.js';
import { databaseUrl, dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';

/**
 * The plain claim as the worker's sessions plan it, on a job table that has
 * no planner statistics yet (a new schema, before autovacuum's first round):
 * it must reach its rows through the claim index and by ctid. Planned as for
 * an empty table, the generic plan otherwise found the ctids by reading the
 * whole table, on every claim of that connection.
 */
@Injectable()
@Job('plan-probe', { maxAttempts: 1 })
class PlanProbe implements JobHandler<{ n: number }> {
  run(_p: { n: number }, _ctx: JobContext): void {}
}

let app: INestApplication | undefined;
const schema = uniqueSchema('plans');

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema);
});

/** Every node of an EXPLAIN (FORMAT JSON) plan, depth first. */
function nodes(plan: Record<string, unknown>): Record<string, unknown>[] {
  const children = (plan['Plans'] as Record<string, unknown>[] | undefined) ?? [];
  return [plan, ...children.flatMap(nodes)];
}

it('claims plain jobs through the claim index and by ctid on a table without statistics', async () => {
  app = await startJobsApp(schema, { worker: { enabled: false } }, { providers: [PlanProbe] });
  const client = new pg.Client({ connectionString: databaseUrl() });
  await client.connect();
  try {
    for (const [name, value] of WORKER_PLANNER_SETTINGS) await client.query(`SET ${name} = ${value}`);
    const explain = async () => {
      const params = `'default', now(), ARRAY['plan-probe'], 10, 'plan-test', 30000::float8`;
      const [row] = (await client.query(`EXPLAIN (FORMAT JSON) EXECUTE plain_claim(${params})`)).rows as [
        { 'QUERY PLAN': [{ Plan: Record<string, unknown> }] },
      ];
      return nodes(row['QUERY PLAN'][0].Plan)
        .filter((n) => n['Relation Name'] === 'job')
        .map((n) => `${n['Node Type'] as string}${n['Index Name'] ? ` ${n['Index Name'] as string}` : ''}`)
        .sort();
    };
    // Where autovacuum is on (the embedded server) it must not analyze the table under the test.
    await client.query(`ALTER TABLE "${schema}".job SET (autovacuum_enabled = false)`);
    // Planned as a worker starting on new tables plans it, and kept by the connection.
    await client.query(`PREPARE plain_claim AS ${claimStatements(schema).claim}`);
    await explain();
    await app.get(JobQueue).enqueueMany(Array.from({ length: 5_000 }, (_, n) => ({ job: PlanProbe, payload: { n } })));
    const [{ analyzed }] = await sql<{ analyzed: boolean }>(
      `SELECT coalesce(last_analyze, last_autoanalyze) IS NOT NULL AS analyzed FROM pg_stat_user_tables
        WHERE schemaname = $1 AND relname = 'job'`,
      [schema],
    );
    expect(analyzed).toBe(false);
    // The update, the walk of the claim index for the ctids, and the update's look-up of them.
    expect(await explain()).toEqual(['Index Scan job_claim_idx', 'ModifyTable', 'Tid Scan']);
  } finally {
    await client.end();
  }
});
