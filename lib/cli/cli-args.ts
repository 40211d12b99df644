import { parseArgs, type ParseArgsConfig } from 'node:util';
import { isUuid, JobsError } from '../model/index.js';

/**
 * Bad usage: an unknown command or option, a missing argument, a value that
 * does not parse. Exit code 2, its message followed by the command's usage,
 * which is the fix.
 */
export class UsageError extends JobsError {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

/** Options every command takes. */
const GLOBAL_OPTIONS = {
  'database-url': { type: 'string' },
  'replica-url': { type: 'string' },
  pooler: { type: 'string' },
  schema: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies OptionSpecs;

export type OptionValues = Record<string, string | boolean | string[] | undefined>;

export interface ParsedCommand {
  command: string | undefined;
  /** Positionals after the command. */
  args: string[];
  options: OptionValues;
}

/**
 * Finds the command: the first positional once the global options (some of
 * which take a value) are read. Unknown options are left for `parseCommand`.
 */
export function findCommand(argv: readonly string[]): string | undefined {
  const { positionals } = parseArgs({
    args: [...argv],
    options: GLOBAL_OPTIONS,
    strict: false,
    allowPositionals: true,
  });
  return positionals[0];
}

/** Reads argv strictly against the global options and the command's own. */
export function parseCommand(argv: readonly string[], options: OptionSpecs): ParsedCommand {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: { ...GLOBAL_OPTIONS, ...options },
      strict: true,
      allowPositionals: true,
    });
    return { command: positionals[0], args: positionals.slice(1), options: values as OptionValues };
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) throw new UsageError((error as Error).message);
    throw error;
  }
}

export function stringOption(options: OptionValues, name: string): string | undefined {
  const value = options[name];
  return typeof value === 'string' ? value : undefined;
}

export function listOption(options: OptionValues, name: string): string[] | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  // Repeated (--state failed --state cancelled) or comma-separated (--state failed,cancelled).
  return [value]
    .flat()
    .flatMap((v) => String(v).split(','))
    .filter((v) => v !== '');
}

/** States given with --state, each among `allowed`. */
export function statesOption<S extends string>(
  options: OptionValues,
  name: string,
  allowed: readonly S[],
): S[] | undefined {
  const values = listOption(options, name);
  for (const v of values ?? []) {
    if (!(allowed as readonly string[]).includes(v)) {
      throw new UsageError(`--${name} must be one of ${allowed.join(', ')}, got "${v}"`);
    }
  }
  return values as S[] | undefined;
}

/** An id argument or option value: a UUID, or bad usage. */
export function idValue(what: string, value: string): string;
export function idValue(what: string, value: string | undefined): string | undefined;
export function idValue(what: string, value: string | undefined): string | undefined {
  if (value !== undefined && !isUuid(value)) {
    throw new UsageError(`${what} must be an id (a UUID such as 0193a1b2-…), got "${value}"`);
  }
  return value;
}

export function integerOption(options: OptionValues, name: string): number | undefined {
  const value = stringOption(options, name);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number, got "${value}"`);
  return Number(value);
}

/** Exactly `count` positionals, named in the message when missing. */
export function positionals(parsed: ParsedCommand, names: readonly string[]): string[] {
  if (parsed.args.length < names.length) {
    throw new UsageError(`${parsed.command} needs ${names.map((n) => `<${n}>`).join(' ')}`);
  }
  if (parsed.args.length > names.length) {
    throw new UsageError(`${parsed.command}: unexpected argument "${parsed.args[names.length]}"`);
  }
  return parsed.args;
}

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * A point in the past given as an age (`7d`, `12h`, `30m`, `45s`, `2w`) or
 * a date (`2026-01-31`, an ISO time); `now` for the age.
 */
export function pastTime(option: string, value: string, now: number): Date {
  const age = /^(\d+)([smhdw])$/.exec(value);
  if (age) return new Date(now - Number(age[1]) * UNITS[age[2]!]!);
  if (/^\d{4}-\d{2}-\d{2}/.test(value)) {
    const date = new Date(value);
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw new UsageError(
    `--${option} must be an age such as 7d, 12h, 30m, 45s or 2w, or a date such as 2026-01-31, got "${value}"`,
  );
}
