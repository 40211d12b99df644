import { createHash } from 'node:crypto';
import { adminStatements } from '../../lib/storage/admin/admin-statements.js';
import { claimStatements } from '../../lib/storage/jobs/claim/claim-statements.js';
import { controlStatements } from '../../lib/storage/jobs/control/control-statements.js';
import { enqueueStatements } from '../../lib/storage/jobs/enqueue/enqueue-statements.js';
import { maintenanceStatements } from '../../lib/storage/jobs/maintenance/maintenance-statements.js';
import { outcomeStatements } from '../../lib/storage/jobs/outcomes/outcome-statements.js';
import { CLAIM_CONTROLLED } from '../../lib/storage/routines/claim-controlled.routine.js';
import { RELEASE_CHILDREN } from '../../lib/storage/routines/release-children.routine.js';
import { defineRoutine, routineName, routineSql } from '../../lib/storage/routines/routine.js';
import { ROUTINE_NAMES, ROUTINES } from '../../lib/storage/routines/routine-catalog.js';
import { SETTLE_JOBS } from '../../lib/storage/routines/settle-jobs.routine.js';
import { workflowStatements } from '../../lib/storage/workflows/workflow-statements.js';

const BASES = ['claim_controlled', 'settle_jobs', 'release_children', 'reopen_job', 'awaited_job_ended', 'job_deleted'];

/** Every SQL text a statements object holds, its builders called with placeholders. */
function texts(statements: Record<string, unknown>): string[] {
  return Object.values(statements).map((v) => (typeof v === 'function' ? String(v('TRUE', '10')) : String(v)));
}

describe('database routines', () => {
  it('are named after a hash of their text: another text, another name; the same text, the same name', () => {
    const a = 'CREATE FUNCTION :SCHEMA.:ROUTINE() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$';
    const b = 'CREATE FUNCTION :SCHEMA.:ROUTINE() RETURNS int LANGUAGE sql AS $$ SELECT 2 $$';
    expect(routineName('probe', a)).toMatch(/^probe_[0-9a-f]{8}$/);
    expect(routineName('probe', a)).toBe(routineName('probe', a));
    expect(routineName('probe', a)).not.toBe(routineName('probe', b));
  });

  it('the catalog holds each routine once, named by the SHA-256 of its template, the placeholders unsubstituted', () => {
    expect(ROUTINES.map((r) => r.base).sort()).toEqual([...BASES].sort());
    for (const r of ROUTINES) {
      const hash = createHash('sha256').update(r.template).digest('hex').slice(0, 8);
      expect(r.name).toBe(`${r.base}_${hash}`);
      expect(r.template).toMatch(/^CREATE FUNCTION :SCHEMA\.:ROUTINE\(/);
    }
    expect(Object.values(ROUTINE_NAMES).sort()).toEqual(ROUTINES.map((r) => r.name).sort());
  });

  it('a name is the same in every schema: the schema is substituted only into the statement that installs it', () => {
    const one = routineSql(CLAIM_CONTROLLED, 'one');
    expect(one).toContain(`CREATE FUNCTION "one".${CLAIM_CONTROLLED.name}(`);
    expect(one).not.toContain(':SCHEMA');
    expect(one).not.toContain(':ROUTINE');
    expect(routineSql(CLAIM_CONTROLLED, 'two')).toBe(one.replaceAll('"one"', '"two"'));
  });

  it("a caller calls its callee's hashed name, so a changed callee changes the caller's name too", () => {
    expect(SETTLE_JOBS.template).toContain(`:SCHEMA.${RELEASE_CHILDREN.name}(`);
    const callee = (body: string) => defineRoutine('callee', `CREATE FUNCTION :SCHEMA.:ROUTINE() ${body}`);
    const caller = (c: { name: string }) =>
      defineRoutine('caller', `CREATE FUNCTION :SCHEMA.:ROUTINE() PERFORM ${c.name}()`);
    expect(caller(callee('v1')).name).not.toBe(caller(callee('v2')).name);
    expect(caller(callee('v1')).name).toBe(caller(callee('v1')).name);
  });

  it('the statements call the routines by their hashed names, never by the names the migrations created', () => {
    const builders = [
      claimStatements,
      controlStatements,
      enqueueStatements,
      maintenanceStatements,
      outcomeStatements,
      workflowStatements,
      adminStatements,
    ];
    const all = builders.flatMap((statements) => texts(statements('s'))).join('\n');
    for (const base of BASES) expect(all).not.toMatch(new RegExp(`\\.${base}\\(`));
    expect(all).toContain(`"s".${ROUTINE_NAMES.claimControlled}(`);
    expect(all).toContain(`"s".${ROUTINE_NAMES.settleJobs}(`);
    expect(all).toContain(`"s".${ROUTINE_NAMES.reopenJob}(`);
  });
});
