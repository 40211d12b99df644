import type { SchemaGrant } from '../jobs-schema.js';
import { listOption, positionals } from './cli-args.js';
import type { CliCommand } from './cli-command.js';
import { plural } from './cli-output.js';

export const migrateCommand: CliCommand = {
  name: 'migrate',
  usage: '[--grant <role>[,<role>…]]… [--reset-unreleased] [--direct-url <url>]',
  summary: 'create the schema or bring it to this version, without starting an app',
  details: [
    'Run it as a role that may CREATE in the database (the schema then is its own); the app may then run as a role',
    'that may not, with only what --grant gives it.',
    '',
    'Options:',
    '  --grant <role>      after migrating, grant <role> what an app needs on the schema and no more: USAGE on the',
    '                      schema; SELECT, INSERT, UPDATE, DELETE on its tables; USAGE, SELECT on its sequences;',
    '                      EXECUTE on its functions; and the same on what this role creates there later (ALTER DEFAULT',
    '                      PRIVILEGES), so the next migrate by this role needs no new grant. Repeat it, or list roles',
    '                      comma-separated; all are granted in one transaction, none if a role does not exist.',
    '  --reset-unreleased  for a development database made from main, which a start refuses (its unreleased versions',
    "                      differ from this build's): forget the records of the versions after the last released one and",
    "                      apply this build's over what is there, keeping the jobs, in one transaction. Refused while a",
    '                      worker of the schema is alive. Without such versions it only migrates.',
    '  --direct-url <url>  the server itself, not the transaction pooler DATABASE_URL may go through (which cannot',
    '                      carry a migration). Default: $DIRECT_DATABASE_URL, unless --database-url is given; without',
    '                      either, --database-url or $DATABASE_URL.',
  ].join('\n'),
  options: {
    grant: { type: 'string', multiple: true },
    'reset-unreleased': { type: 'boolean' },
    'direct-url': { type: 'string' },
  },
  async run(parsed, io) {
    positionals(parsed, []);
    const grant = listOption(parsed.options, 'grant') ?? [];
    const target = io.target();
    const { migrateJobsSchema } = await import('../jobs-schema.js');
    const resetUnreleased = parsed.options['reset-unreleased'] === true;
    const report = await migrateJobsSchema(target.directUrl ?? target.databaseUrl, target.schema, {
      grant,
      resetUnreleased,
    });
    io.out.result(report, (r) => {
      const lines: string[] = [];
      if (r.reset?.length) {
        lines.push(`schema ${r.schema}: forgot unreleased version(s) ${r.reset.join(', ')}, recorded by another build`);
      } else if (r.reset) {
        lines.push(`schema ${r.schema}: no unreleased version of another build to reset`);
      }
      lines.push(
        r.applied.length
          ? `schema ${r.schema}: applied version(s) ${r.applied.join(', ')}; now at version ${r.version}`
          : `schema ${r.schema} is up to date (version ${r.version})`,
      );
      if (r.routines.length) lines.push(`installed routine(s) ${r.routines.join(', ')}`);
      for (const d of r.deferred) {
        lines.push(
          `version ${d.version} not applied yet: it is breaking (${d.breaking}) and ${d.olderWorkers} worker(s) of an older build ` +
            `are still running; run migrate again once they have stopped`,
        );
      }
      for (const g of r.granted ?? []) lines.push(grantLine(r.schema, g));
      return lines.join('\n');
    });
  },
};

function grantLine(schema: string, g: SchemaGrant): string {
  return (
    `granted ${g.role}: USAGE on schema ${schema}; SELECT, INSERT, UPDATE, DELETE on ${plural(g.tables.length, 'table')}; ` +
    `USAGE, SELECT on ${plural(g.sequences.length, 'sequence')}; EXECUTE on ${plural(g.functions.length, 'function')}; ` +
    `and the same on what ${g.laterObjectsOf} creates in ${schema} later`
  );
}
