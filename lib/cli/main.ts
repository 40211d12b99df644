#!/usr/bin/env node
import 'reflect-metadata';
import { findCommand, parseCommand, UsageError, type OptionSpecs } from './cli-args.js';
import type { CliCommand } from './cli-command.js';
import { cliTarget } from './cli-context.js';
import { CliOutput } from './cli-output.js';
import { jobCommands } from './jobs.command.js';
import { migrateCommand } from './migrate.command.js';
import { overviewCommands } from './overview.command.js';
import { purgeCommand } from './purge.command.js';
import { reencryptCommand } from './reencrypt.command.js';
import { scheduleCommands } from './schedules.command.js';
import { servicesCommand } from './services.command.js';

const BIN = 'nestjs-durable-jobs';

const COMMANDS: readonly CliCommand[] = [
  ...overviewCommands,
  ...jobCommands,
  purgeCommand,
  reencryptCommand,
  ...scheduleCommands,
  servicesCommand,
  migrateCommand,
];

/** Exit codes: the contract scripts rely on. */
const DONE = 0;
const REFUSED = 1;
const BAD_USAGE = 2;

function help(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    `Usage: ${BIN} <command> [options]`,
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Options of every command:',
    '  --database-url <url>  the PostgreSQL server (default: $DATABASE_URL)',
    '  --replica-url <url>   a read replica for what commands show (default: $JOBS_REPLICA_URL); actions stay on the primary',
    "  --pooler <mode>       'transaction' or 'session': what sits in front of the server on --database-url (default: $JOBS_POOLER)",
    '  --schema <name>       the schema of the job tables (default: jobs)',
    '  --json                the result as JSON on stdout',
    '  -h, --help            this help, or a command\'s with "<command> --help"',
    '',
    'migrate goes to $DIRECT_DATABASE_URL (or --direct-url) when set: the server itself, where $DATABASE_URL is a pooler.',
    '',
    'Encrypted jobs: JOBS_ENCRYPTION_KEYS="<id>:<base64 key>,…" (and JOBS_ENCRYPTION_CURRENT) decrypt what commands show.',
    '',
    'Ages: 45s, 30m, 12h, 7d, 2w, or a date (2026-01-31). Exit codes: 0 done, 1 refused (the message says why), 2 bad usage.',
  ].join('\n');
}

function commandHelp(c: CliCommand): string {
  return `Usage: ${BIN} ${c.name} ${c.usage}`.trimEnd() + `\n\n${c.summary}\n` + (c.details ? `\n${c.details}\n` : '');
}

async function main(argv: readonly string[]): Promise<number> {
  const name = findCommand(argv);
  const command = COMMANDS.find((c) => c.name === name);
  if (name === 'help' || (name === undefined && (argv.includes('--help') || argv.includes('-h')))) {
    process.stdout.write(`${help()}\n`);
    return DONE;
  }
  if (!command) {
    process.stderr.write(`${name === undefined ? 'no command given' : `unknown command "${name}"`}\n\n${help()}\n`);
    return BAD_USAGE;
  }
  try {
    const parsed = parseCommand(argv, command.options ?? ({} as OptionSpecs));
    if (parsed.options.help) {
      process.stdout.write(commandHelp(command));
      return DONE;
    }
    const out = new CliOutput(process.stdout, parsed.options.json === true);
    await command.run(parsed, { out, target: () => cliTarget(parsed.options, process.env) });
    return DONE;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\n\n${commandHelp(command)}`);
      return BAD_USAGE;
    }
    // A JobsError names the fix; anything else (the server refusing the connection) at least says what failed.
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return REFUSED;
  }
}

process.exitCode = await main(process.argv.slice(2));
