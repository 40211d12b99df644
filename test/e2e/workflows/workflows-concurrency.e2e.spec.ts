import type { INestApplication } from '@nestjs/common';
import { BatchBuilder, JobQueue, type FlowEdge } from 'nestjs-durable-jobs';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { probeProviders } from '../../support/probe.jobs.js';
import { startSampleApp } from '../../support/sample-app.js';
import { waitFor } from '../../support/wait.js';
import { Step, WF_RUN_TABLE, workflowProviders } from '../../support/workflow.jobs.js';

const schema = uniqueSchema('wfc');
const apps: INestApplication[] = [];
const BATCHES = 200;
const MEMBERS = 20;

beforeAll(async () => {
  for (const name of ['A', 'B', 'C']) {
    apps.push(
      await startSampleApp({
        schema,
        worker: { concurrency: 20, pollInterval: 200 },
        providers: [...probeProviders(name), ...workflowProviders],
      }),
    );
    if (name === 'A') await sql(WF_RUN_TABLE(schema));
  }
});

afterAll(async () => {
  for (const app of apps) await app.close();
  await dropSchemas(schema, `${schema}_jobs`);
});

/** A seeded generator, so a failing shape can be replayed. */
function random(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

it.each([1, 2, 3])(
  'round %i: 200 batches of 20 and a 500-node DAG on three instances: every callback and child runs once, never early',
  async (round) => {
    const prefix = `r${round}`;
    // Batches are dispatched from all instances at once, while they work.
    const batchIds = await Promise.all(
      Array.from({ length: BATCHES }, (_, i) => {
        const draft = apps[i % apps.length]!.get(BatchBuilder).create(`${prefix}-b${i}`);
        for (let m = 0; m < MEMBERS; m++) draft.add(Step, { tag: `${prefix}-b${i}-m${m}` });
        return draft
          .then(Step, { tag: `${prefix}-b${i}-then` }, { priority: 1 })
          .finally(Step, { tag: `${prefix}-b${i}-finally` }, { priority: 1 })
          .dispatch();
      }),
    );
    const next = random(round);
    const flow = apps[round % apps.length]!.get(JobQueue).flow();
    const levels = [100, 200, 200];
    const keys: string[][] = [];
    levels.forEach((size, level) => {
      keys.push([]);
      for (let k = 0; k < size; k++) {
        const key = `${prefix}-l${level}-${k}`;
        const after: FlowEdge[] = [];
        if (level > 0) {
          const pool = keys[level - 1]!;
          const parents = new Set<string>();
          const want = 1 + Math.floor(next() * 3);
          while (parents.size < want) parents.add(pool[Math.floor(next() * pool.length)]!);
          after.push(...parents);
          if (level === 2 && next() < 0.3) after.push({ key: keys[0]![Math.floor(next() * 100)]!, on: 'always' });
        }
        flow.add(key, Step, { tag: key }, { after, priority: level > 0 ? 1 : 0 });
        keys[level]!.push(key);
      }
    });
    await flow.dispatch();

    const expected = BATCHES * (MEMBERS + 2) + 500;
    await waitFor(
      `${expected} runs of round ${round}`,
      async () =>
        (
          await sql<{ n: number }>(
            `SELECT count(*)::int AS n FROM "${schema}".wf_run WHERE tag LIKE $1 AND ended_at IS NOT NULL`,
            [`${prefix}-%`],
          )
        )[0]!.n >= expected,
      90_000,
      250,
    );
    // Let any duplicate that might still be on its way show up.
    await new Promise((r) => setTimeout(r, 500));

    const runs = await sql<{ tag: string; n: number }>(
      `SELECT tag, count(*)::int AS n FROM "${schema}".wf_run WHERE tag LIKE $1 GROUP BY tag HAVING count(*) <> 1`,
      [`${prefix}-%`],
    );
    expect(runs).toEqual([]);
    const tags = await sql<{ n: number }>(
      `SELECT count(DISTINCT tag)::int AS n FROM "${schema}".wf_run WHERE tag LIKE $1`,
      [`${prefix}-%`],
    );
    expect(tags[0]!.n).toBe(expected);

    const states = await sql<{ state: string; n: number }>(
      `SELECT state, count(*)::int AS n FROM "${schema}_jobs".job_batch WHERE id = ANY($1::uuid[]) GROUP BY state`,
      [batchIds.map((b) => b.id)],
    );
    expect(states).toEqual([{ state: 'succeeded', n: BATCHES }]);
    const counters = await sql<{ bad: number }>(
      `SELECT count(*)::int AS bad FROM "${schema}_jobs".job_batch
        WHERE id = ANY($1::uuid[]) AND (total <> ${MEMBERS} OR succeeded <> ${MEMBERS} OR pending <> 0)`,
      [batchIds.map((b) => b.id)],
    );
    expect(counters[0]!.bad).toBe(0);

    // Never early. A callback or child counts, as it starts, its parents (parent jobs, members
    // of its batch) whose outcome is not committed yet (see Step): there must be none. A
    // handler's own end time would not do: it is written before that run's outcome commits.
    // Callbacks and children outrank members and parents (priority 1), so one released too
    // soon is claimed at once, while its parents are still at work, rather than after the
    // backlog of other batches' members.
    const early = await sql<{ tag: string; open_parents: number }>(
      `SELECT tag, open_parents FROM "${schema}".wf_run WHERE tag LIKE $1 AND open_parents > 0`,
      [`${prefix}-%`],
    );
    expect(early).toEqual([]);
    const instances = await sql<{ instance: string }>(
      `SELECT DISTINCT instance FROM "${schema}".wf_run WHERE tag LIKE $1 ORDER BY instance`,
      [`${prefix}-%`],
    );
    expect(instances.map((r) => r.instance)).toEqual(['A', 'B', 'C']);
  },
  120_000,
);
