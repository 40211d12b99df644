import { existsSync, readdirSync } from 'node:fs';
import { ESLint } from 'eslint';

/** storage's folder table, as the lint rule reads it (a plain .js module, so loaded untyped). */
async function storageFolders(): Promise<Record<string, string[]>> {
  const config: string = '../../eslint.config.js';
  return ((await import(config)) as { STORAGE_FOLDERS: Record<string, string[]> }).STORAGE_FOLDERS;
}

/** The layer rule in eslint.config.js, on code it must refuse and code it must let through. */
async function layerErrors(file: string, code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: process.cwd() });
  const [result] = await eslint.lintText(code, { filePath: file });
  return result!.messages.filter((m) => m.ruleId === 'durable-jobs/layers').map((m) => m.message);
}

describe('the layer table, enforced by npm run lint', () => {
  it('refuses an import across the table: the worker reaching into the queue or a PostgreSQL class', async () => {
    const errors = await layerErrors(
      'lib/worker/example.ts',
      `import { JobQueue } from '../queue/job-queue.service.js';
       import { PostgresClaimStorage } from '../storage/jobs/claim/postgres-claim-storage.js';
       export type X = [JobQueue, PostgresClaimStorage];\n`,
    );
    expect(errors).toEqual([
      expect.stringMatching(/^worker\/ may not import \.\.\/queue\/job-queue\.service\.js/),
      expect.stringMatching(/^worker\/ may not import \.\.\/storage\/jobs\/claim\/postgres-claim-storage\.js/),
    ]);
    // The message points at the page that holds the table.
    expect(errors[0]).toContain('See docs/contributing/architecture.md, "Layers".');
    expect(existsSync('docs/contributing/architecture.md')).toBe(true);
  });

  it('refuses model/ anything of ours, and lets storage contracts through to the layers above', async () => {
    expect(await layerErrors('lib/model/example.ts', `export * from '../discovery/job-registry.js';\n`)).toHaveLength(
      1,
    );
    expect(
      await layerErrors(
        'lib/queue/example.ts',
        `import type { EnqueueStorage } from '../storage/jobs/enqueue/enqueue-storage.interface.js';
         import { isUuid } from '../model/index.js';
         export type X = [EnqueueStorage, typeof isUuid];\n`,
      ),
    ).toEqual([]);
  });

  it("refuses an import against storage's folder table: the ground floor reaching up, jobs/ into workflows/", async () => {
    const errors = await layerErrors(
      'lib/storage/sql/example.ts',
      `import { prepareSchema } from '../connection/schema-preparation.js';
       import type { JobNotifications } from '../notifications/job-notifications.interface.js';
       export type X = [typeof prepareSchema, JobNotifications];\n`,
    );
    expect(errors).toEqual([
      expect.stringMatching(
        /^storage\/sql\/ may not import \.\.\/connection\/schema-preparation\.js \(storage\/connection\/\)/,
      ),
      // A contract is no exception inside storage: the table holds for every file.
      expect.stringMatching(/^storage\/sql\/ may not import \.\.\/notifications\/job-notifications\.interface\.js/),
    ]);
    expect(errors[0]).toContain('allowed: no other storage folder. See docs/contributing/architecture.md, "Storage".');

    expect(
      await layerErrors(
        'lib/storage/jobs/example.ts',
        `import type { WorkflowStorage } from '../workflows/workflow-storage.interface.js';
         export type X = WorkflowStorage;\n`,
      ),
    ).toEqual([expect.stringMatching(/^storage\/jobs\/ may not import .*allowed: sql\/, routines\/, migrations\/\./)]);

    // A file directly in storage/ belongs to no folder of the table, either way.
    expect(await layerErrors('lib/storage/example.ts', `export * from './sql/sql-identifiers.js';\n`)).toHaveLength(1);
    expect(await layerErrors('lib/storage/sql/example.ts', `export * from '../storage-context.js';\n`)).toHaveLength(1);
  });

  it("lets storage's folders import down the table and within themselves", async () => {
    expect(
      await layerErrors(
        'lib/storage/workflows/example.ts',
        `import { PostgresEnqueueStorage } from '../jobs/enqueue/postgres-enqueue-storage.js';
         import { quoteIdent } from '../sql/sql-identifiers.js';
         import { workflowStatements } from './workflow-statements.js';
         import { JobsError } from '../../model/index.js';
         export type X = [PostgresEnqueueStorage, typeof quoteIdent, typeof workflowStatements, JobsError];\n`,
      ),
    ).toEqual([]);
    expect(
      await layerErrors(
        'lib/storage/connection/example.ts',
        `import { startEmbeddedPostgres } from '../embedded/embedded-postgres.js';
         import { migrateSchema } from '../migrations/schema-migrator.js';
         export type X = [typeof startEmbeddedPostgres, typeof migrateSchema];\n`,
      ),
    ).toEqual([]);
  });

  it('has a row for every folder of storage/, and no loop among the rows', async () => {
    const table = await storageFolders();
    const folders = readdirSync('lib/storage', { withFileTypes: true });
    // Every file of storage/ lives in one of its folders.
    expect(folders.filter((e) => !e.isDirectory()).map((e) => e.name)).toEqual([]);
    expect(folders.map((e) => e.name).sort()).toEqual(Object.keys(table).sort());

    const loops: string[] = [];
    const visit = (folder: string, path: string[]): void => {
      if (path.includes(folder)) return void loops.push([...path, folder].join(' -> '));
      for (const next of table[folder] ?? []) visit(next, [...path, folder]);
    };
    for (const folder of Object.keys(table)) visit(folder, []);
    expect(loops).toEqual([]);
    for (const allowed of Object.values(table)) for (const f of allowed) expect(Object.keys(table)).toContain(f);
  });
});
