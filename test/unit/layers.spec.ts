import { existsSync } from 'node:fs';
import { ESLint } from 'eslint';

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
});
