import { randomBytes } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import pg from 'pg';
import { Job, JobQueue, JobsError, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { json, runCli } from '../../support/cli-process.js';
import { databaseUrl, sql } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';
import { ROUTINES } from '../../../lib/storage/routines/routine-catalog.js';

// Two real roles in a database of this file's own: the owner may CREATE in it and runs `migrate`,
// the app's role is a plain LOGIN role and runs the app on what `--grant` gave it. Roles are
// cluster-wide, so their names are this run's; they carry passwords, as the embedded server asks
// every user for one (trust auth ignores them).
const tag = `${process.pid}_${randomBytes(3).toString('hex')}`;
const database = `t_roles_${tag}`;
const owner = `t_owner_${tag}`;
const appRole = `t_app_${tag}`;
const ghost = `t_ghost_${tag}`;
/** A role that exists and holds nothing: what the app's role may not grant to. */
const peer = `t_peer_${tag}`;
const password = randomBytes(12).toString('hex');
const schema = 'jobs';
const QUEUE = 'managed-roles';
const NO_PRIVILEGE = '42501';

/** The test server's URL, for `role` and this file's database. */
function urlOf(role: string | null): string {
  const url = new URL(databaseUrl());
  if (role) {
    url.username = role;
    url.password = password;
  }
  url.pathname = `/${database}`;
  return url.toString();
}
const ownerUrl = urlOf(owner);
const appUrl = urlOf(appRole);

/** A query on this file's database as `role` (the superuser when null). */
async function query<T = Record<string, unknown>>(role: string | null, text: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: urlOf(role) });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

/** The SQLSTATE `text` fails with as `role`; null when it succeeds. */
async function refusal(role: string, text: string): Promise<string | null> {
  try {
    await query(role, text);
    return null;
  } catch (error) {
    return String((error as { code?: unknown }).code);
  }
}

/** What `role` holds on the schema: its usage, table grants and default privileges, as the catalog says. */
async function privilegesOf(role: string) {
  const [row] = await query<{ usage: boolean; tables: number; defaults: number }>(
    null,
    `SELECT coalesce(has_schema_privilege($1, n.oid, 'USAGE'), false) AS usage,
            (SELECT count(*)::int FROM information_schema.role_table_grants WHERE grantee = $1 AND table_schema = $2) AS tables,
            (SELECT count(DISTINCT d.defaclobjtype)::int FROM pg_default_acl d, aclexplode(d.defaclacl) a
              WHERE a.grantee = (SELECT oid FROM pg_roles WHERE rolname = $1)) AS defaults
       FROM (SELECT $2::name AS nspname) s LEFT JOIN pg_namespace n USING (nspname)`,
    [role, schema],
  );
  return row!;
}

/** Who ran the step and the transaction: each asks the server for its session's role. */
@Job('managed-roles-whoami', { queue: QUEUE })
class WhoAmI implements JobHandler<{ note: string }, { step: string; transaction: string; plain: string }> {
  async run({ note }: { note: string }, ctx: JobContext) {
    const plain = await ctx.step('plain', () => `noted ${note}`);
    const step = await ctx.step('who', { transaction: true }, async (manager) => {
      const [row] = (await manager.query('SELECT current_user AS who')) as Array<{ who: string }>;
      return row!.who;
    });
    // The transaction's result is the job's, committed with its success.
    return ctx.transaction(async (manager) => {
      const [row] = (await manager.query(
        `INSERT INTO public.effect (job_id, who) VALUES ($1, current_user) RETURNING who`,
        [ctx.jobId],
      )) as Array<{ who: string }>;
      return { plain, step, transaction: row!.who };
    });
  }
}

let app: INestApplication | undefined;
const startAsApp = () =>
  startJobsApp(
    schema,
    {
      connection: appUrl,
      // Straight to the server as the app's role even when the suite runs through a pooler.
      pooler: undefined,
      directConnection: undefined,
      worker: { pollInterval: 100, queues: [QUEUE] },
    },
    { providers: [WhoAmI] },
  );

beforeAll(async () => {
  await sql(`CREATE ROLE "${owner}" LOGIN PASSWORD '${password}'`);
  await sql(`CREATE ROLE "${appRole}" LOGIN PASSWORD '${password}'`);
  await sql(`CREATE ROLE "${peer}"`);
  // template0: no other session can be using it, as one may be on template1.
  await sql(`CREATE DATABASE "${database}" TEMPLATE template0`);
  await sql(`GRANT CREATE ON DATABASE "${database}" TO "${owner}"`);
  // What the handler's transaction writes: the app's own table, outside the job schema.
  await query(null, `CREATE TABLE public.effect (job_id uuid PRIMARY KEY, who text NOT NULL)`);
  await query(null, `GRANT SELECT, INSERT ON public.effect TO "${appRole}"`);
});

afterAll(async () => {
  await app?.close();
  // One role at a time: a DROP OWNED BY naming both trips over the default privileges one holds
  // for the other ("could not find tuple for default ACL"). Their objects all live in this file's
  // database, so nothing is left to reassign once it is dropped.
  const roles = [peer, appRole, owner];
  for (const role of roles) await query(null, `DROP OWNED BY "${role}"`).catch(() => undefined);
  await sql(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  for (const role of roles) await sql(`DROP ROLE IF EXISTS "${role}"`);
});

describe('an app role that may not CREATE, and an owner that migrates', () => {
  it('a new LOGIN role may not create a schema in the database; the owner may', async () => {
    const [can] = await query<{ app: boolean; owner: boolean }>(
      null,
      `SELECT has_database_privilege($1, current_database(), 'CREATE') AS app,
              has_database_privilege($2, current_database(), 'CREATE') AS owner`,
      [appRole, owner],
    );
    expect(can).toEqual({ app: false, owner: true });
    expect(await refusal(appRole, `CREATE SCHEMA probe_${tag}`)).toBe(NO_PRIVILEGE);
    // Since PostgreSQL 15 the public schema takes no new objects from PUBLIC either.
    expect(await refusal(appRole, `CREATE TABLE public.probe (id int)`)).toBe(NO_PRIVILEGE);
  });

  it("the app's role starting on a new schema fails naming migrate, and writes nothing", async () => {
    const start = startAsApp();
    await expect(start).rejects.toThrow(JobsError);
    await expect(start).rejects.toThrow(
      new RegExp(
        `schema "${schema}" needs migrating or routines installed, and this role may not \\(permission denied.*\\)\\. ` +
          `Potential fix: run "npx nestjs-durable-jobs migrate --schema ${schema}" .*the grants it prints`,
      ),
    );
    const owned = await query<{ n: number }>(
      null,
      `SELECT (SELECT count(*)::int FROM pg_namespace WHERE nspname = $1)
            + (SELECT count(*)::int FROM pg_class WHERE relowner = (SELECT oid FROM pg_roles WHERE rolname = $2)) AS n`,
      [schema, appRole],
    );
    expect(owned[0]!.n).toBe(0);
  });

  it('migrate --grant refuses a role that does not exist and grants nothing, migrating as the direct URL says', async () => {
    // DATABASE_URL is the app's role, which may not migrate: the run only succeeds through DIRECT_DATABASE_URL.
    const run = await runCli(['migrate', '--schema', schema, '--grant', `${appRole},${ghost}`], {
      DATABASE_URL: appUrl,
      DIRECT_DATABASE_URL: ownerUrl,
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(
        `role\\(s\\) "${ghost}" do not exist, so nothing was granted on schema "${schema}" .*` +
          `Potential fix: create the role first \\(CREATE ROLE "${ghost}" LOGIN PASSWORD`,
      ),
    );
    expect(run.stderr).not.toContain(`"${appRole}" do not exist`);
    const [made] = await query<{ owner: string }>(
      null,
      `SELECT nspowner::regrole::text AS owner FROM pg_namespace WHERE nspname = $1`,
      [schema],
    );
    expect(made).toEqual({ owner });
    expect(await privilegesOf(appRole)).toEqual({ usage: false, tables: 0, defaults: 0 });
  });

  it('migrate --grant gives the role what the app needs, and prints it', async () => {
    const text = await runCli(['migrate', '--schema', schema, '--grant', appRole, '--direct-url', ownerUrl], {
      DATABASE_URL: appUrl,
      DIRECT_DATABASE_URL: undefined,
    });
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toMatch(
      new RegExp(
        `^schema ${schema} is up to date \\(version \\d+\\)\\n` +
          `granted ${appRole}: USAGE on schema ${schema}; SELECT, INSERT, UPDATE, DELETE on \\d+ tables; ` +
          `USAGE, SELECT on \\d+ sequences?; EXECUTE on \\d+ functions?; and the same on what ${owner} creates in ${schema} later\\n$`,
      ),
    );
    // Again, as JSON: granting is idempotent, and lists what it covers.
    const report = json<{ applied: number[]; granted: Array<Record<string, unknown>> }>(
      await runCli(['migrate', '--schema', schema, '--grant', appRole, '--json'], {
        DATABASE_URL: appUrl,
        DIRECT_DATABASE_URL: ownerUrl,
      }),
    );
    expect(report.applied).toEqual([]);
    expect(report.granted).toEqual([
      {
        role: appRole,
        tables: expect.arrayContaining(['job', 'job_step', 'schema_version', 'worker']),
        sequences: expect.any(Array),
        functions: expect.arrayContaining(ROUTINES.map((r) => r.name)),
        laterObjectsOf: owner,
      },
    ]);
    const privileges = await privilegesOf(appRole);
    expect(privileges).toMatchObject({ usage: true, defaults: 3 });
    // Four privileges a table: no TRUNCATE, REFERENCES or TRIGGER.
    expect(privileges.tables).toBe(4 * (report.granted[0]!.tables as string[]).length);
  });

  it("migrate as the app's role may not grant what it does not own: refused, nothing granted", async () => {
    // --database-url on the command line is this run's server, over the environment's DIRECT_DATABASE_URL.
    const run = await runCli(['migrate', '--schema', schema, '--grant', peer, '--database-url', appUrl], {
      DIRECT_DATABASE_URL: ownerUrl,
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(
        `role "${peer}" would still lack privileges on \\d+ of schema "${schema}"'s objects \\(schema ${schema}, .*\\): ` +
          `the role running migrate may not grant them.*Nothing was granted\\. Potential fix: run migrate --grant as the role that owns`,
      ),
    );
    expect(await privilegesOf(peer)).toEqual({ usage: false, tables: 0, defaults: 0 });
    const [byApp] = await query<{ n: number }>(
      null,
      `SELECT count(*)::int AS n FROM pg_default_acl WHERE defaclrole = (SELECT oid FROM pg_roles WHERE rolname = $1)`,
      [appRole],
    );
    expect(byApp).toEqual({ n: 0 });
  });

  it("the app's role starts the module and runs a job with steps and a transaction", async () => {
    app = await startAsApp();
    const jobs = app.get(JobQueue);
    const { id } = await jobs.enqueue(WhoAmI, { note: 'least privilege' });
    const done = await waitFor('the job to succeed', async () => {
      const job = await jobs.get(id);
      return job?.state === 'succeeded' ? job : null;
    });
    expect(done.result).toEqual({ plain: 'noted least privilege', step: appRole, transaction: appRole });
    expect(done.steps.map((s) => [s.name, s.attempt])).toEqual([
      ['plain', 1],
      ['who', 1],
    ]);
    expect(await query(null, `SELECT job_id, who FROM public.effect`)).toEqual([{ job_id: id, who: appRole }]);
    // Every session of the app, its worker's and its listener's included, is the app's role.
    const sessions = await sql<{ usename: string }>(
      `SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`,
      [database],
    );
    expect(sessions).toEqual([{ usename: appRole }]);
  });

  it("the app's role still may not create anything in the schema", async () => {
    expect(await refusal(appRole, `CREATE TABLE "${schema}".intruder (id int)`)).toBe(NO_PRIVILEGE);
    expect(
      await refusal(appRole, `CREATE FUNCTION "${schema}".intruder() RETURNS int LANGUAGE sql AS 'SELECT 1'`),
    ).toBe(NO_PRIVILEGE);
    expect(await refusal(appRole, `ALTER TABLE "${schema}".job ADD COLUMN intruder int`)).toBe(NO_PRIVILEGE);
    expect(await refusal(appRole, `TRUNCATE "${schema}".job_step`)).toBe(NO_PRIVILEGE);
    expect(await refusal(appRole, `CREATE SCHEMA intruder_${tag}`)).toBe(NO_PRIVILEGE);
  });
});
