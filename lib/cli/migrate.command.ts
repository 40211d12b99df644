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
    io.out.result(report, (r) => {
      const lines = [
        r.applied.length
          ? `schema ${r.schema}: applied version(s) ${r.applied.join(', ')}; now at version ${r.version}`
          : `schema ${r.schema} is up to date (version ${r.version})`,
      ];
      if (r.routines.length) lines.push(`installed routine(s) ${r.routines.join(', ')}`);
      for (const d of r.deferred) {
        lines.push(
          `version ${d.version} not applied yet: it is breaking (${d.breaking}) and ${d.olderWorkers} worker(s) of an older build ` +
            `are still running; run migrate again once they have stopped`,
        );
      }
      return lines.join('\n');
    });
  },
};
