import { positionals } from './cli-args.js';
import type { CliCommand } from './cli-command.js';

export const migrateCommand: CliCommand = {
  name: 'migrate',
  usage: '',
  summary: 'create the schema or bring it to this version, without starting an app',
  async run(parsed, io) {
    positionals(parsed, []);
    const target = io.target();
    const { migrateJobsSchema } = await import('../jobs-schema.js');
    const report = await migrateJobsSchema(target.databaseUrl, target.schema);
    io.out.result(report, (r) =>
      r.applied.length
        ? `schema ${r.schema}: applied version(s) ${r.applied.join(', ')}; now at version ${r.version}`
        : `schema ${r.schema} is up to date (version ${r.version})`,
    );
  },
};
