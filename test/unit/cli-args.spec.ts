import {
  findCommand,
  idValue,
  integerOption,
  listOption,
  parseCommand,
  pastTime,
  positionals,
  statesOption,
  stringOption,
  UsageError,
  type OptionSpecs,
} from '../../lib/cli/cli-args.js';
import { JobsError } from '../../lib/model/errors.js';

const LIST_OPTIONS = {
  state: { type: 'string', multiple: true },
  limit: { type: 'string' },
  all: { type: 'boolean' },
  force: { type: 'boolean', short: 'f' },
} as const satisfies OptionSpecs;

const ID = '0193a1b2-1a2b-7c3d-8e4f-5a6b7c8d9e0f';

/** The UsageError `call` throws, so its class and message can both be checked. */
function usageErrorOf(call: () => unknown): UsageError {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return error as UsageError;
  }
  throw new Error('expected a UsageError, and nothing was thrown');
}

describe('UsageError', () => {
  it('is a JobsError named UsageError, its message as given', () => {
    const error = new UsageError('show needs <id>');
    expect(error).toBeInstanceOf(JobsError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('UsageError');
    expect(error.message).toBe('show needs <id>');
  });
});

describe('findCommand', () => {
  it('finds the first positional past the global options, values included', () => {
    expect(findCommand(['--schema', 'list', 'stats'])).toBe('stats');
    expect(findCommand(['--database-url', 'postgres://x/y', '--json', 'list', '--bogus'])).toBe('list');
    expect(findCommand(['-h'])).toBeUndefined();
    expect(findCommand([])).toBeUndefined();
  });

  it('leaves unknown options for parseCommand instead of refusing them', () => {
    expect(findCommand(['--bogus', 'retry', ID])).toBe('retry');
  });
});

describe('parseCommand', () => {
  it('reads strings, booleans, shorts, repeated options and positionals, with the global options', () => {
    const parsed = parseCommand(
      [
        'retry',
        ID,
        '--state',
        'failed',
        '--state=cancelled',
        '--limit',
        '10',
        '--all',
        '-f',
        '--json',
        '--schema',
        's',
      ],
      LIST_OPTIONS,
    );
    expect(parsed).toEqual({
      command: 'retry',
      args: [ID],
      options: { state: ['failed', 'cancelled'], limit: '10', all: true, force: true, json: true, schema: 's' },
    });
    expect(parseCommand(['stats', '-h'], {}).options).toEqual({ help: true });
    expect(parseCommand([], {})).toEqual({ command: undefined, args: [], options: {} });
  });

  it.each([
    [['list', '--bogus'], /^Unknown option '--bogus'/],
    [['list', '-x'], /^Unknown option '-x'/],
    [['list', '--limit'], /^Option '--limit <value>' argument missing/],
    [['list', '--schema'], /^Option '--schema <value>' argument missing/],
    [['list', '--all=yes'], /^Option '--all' does not take an argument/],
  ])('turns the parser refusing %p into a UsageError with its message', (argv, message) => {
    expect(usageErrorOf(() => parseCommand(argv, LIST_OPTIONS)).message).toMatch(message);
  });

  it('knows only the options it is given: a command option is unknown to another command', () => {
    expect(usageErrorOf(() => parseCommand(['stats', '--limit', '3'], {})).message).toMatch(/Unknown option '--limit'/);
  });
});

describe('option readers', () => {
  const options = { state: ['failed,cancelled', 'skipped', ''], limit: '25', all: true, one: 'queued' };

  it('reads a string option, and nothing from a boolean or an absent one', () => {
    expect(stringOption(options, 'limit')).toBe('25');
    expect(stringOption(options, 'all')).toBeUndefined();
    expect(stringOption(options, 'none')).toBeUndefined();
  });

  it('reads a list both repeated and comma-separated, dropping empty items', () => {
    expect(listOption(options, 'state')).toEqual(['failed', 'cancelled', 'skipped']);
    expect(listOption(options, 'one')).toEqual(['queued']);
    expect(listOption(options, 'none')).toBeUndefined();
  });

  it('reads states among the allowed choices, and names the choices for any other', () => {
    const allowed = ['failed', 'cancelled', 'skipped'] as const;
    expect(statesOption(options, 'state', allowed)).toEqual(['failed', 'cancelled', 'skipped']);
    expect(statesOption(options, 'none', allowed)).toBeUndefined();
    const error = usageErrorOf(() => statesOption({ state: ['failed', 'nope'] }, 'state', allowed));
    expect(error.message).toBe('--state must be one of failed, cancelled, skipped, got "nope"');
  });

  it('reads whole numbers only', () => {
    expect(integerOption(options, 'limit')).toBe(25);
    expect(integerOption({ limit: '0' }, 'limit')).toBe(0);
    expect(integerOption(options, 'none')).toBeUndefined();
    for (const bad of ['ten', '-1', '1.5', '1e3', '']) {
      expect(usageErrorOf(() => integerOption({ limit: bad }, 'limit')).message).toBe(
        `--limit must be a whole number, got "${bad}"`,
      );
    }
  });

  it('takes an id only when it is a UUID', () => {
    expect(idValue('<id>', ID)).toBe(ID);
    expect(idValue('--batch', undefined)).toBeUndefined();
    expect(usageErrorOf(() => idValue('<id>', '42')).message).toBe(
      '<id> must be an id (a UUID such as 0193a1b2-…), got "42"',
    );
  });
});

describe('positionals', () => {
  const parsed = (args: string[]) => ({ command: 'show', args, options: {} });

  it('returns exactly the named arguments', () => {
    expect(positionals(parsed([ID]), ['id'])).toEqual([ID]);
    expect(positionals(parsed([]), [])).toEqual([]);
  });

  it('names what is missing, and the first argument too many', () => {
    expect(usageErrorOf(() => positionals(parsed([]), ['id'])).message).toBe('show needs <id>');
    expect(usageErrorOf(() => positionals(parsed(['a']), ['queue', 'name'])).message).toBe('show needs <queue> <name>');
    expect(usageErrorOf(() => positionals(parsed([ID, 'extra']), ['id'])).message).toBe(
      'show: unexpected argument "extra"',
    );
  });
});

describe('pastTime', () => {
  const now = Date.UTC(2026, 0, 31, 12, 0, 0);

  it.each([
    ['45s', 45_000],
    ['30m', 30 * 60_000],
    ['12h', 12 * 3_600_000],
    ['7d', 7 * 86_400_000],
    ['2w', 14 * 86_400_000],
    ['0d', 0],
  ])('reads the age %s back from now', (value, ms) => {
    expect(pastTime('older-than', value, now).getTime()).toBe(now - ms);
  });

  it('reads a date or an ISO time as it is', () => {
    expect(pastTime('before', '2026-01-01', now).toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(pastTime('before', '2025-12-24T18:30:00Z', now).toISOString()).toBe('2025-12-24T18:30:00.000Z');
  });

  it.each(['soon', '7', '7y', '-7d', '2026-13-45', 'd7'])('refuses %p naming the option and both forms', (value) => {
    expect(usageErrorOf(() => pastTime('succeeded-before', value, now)).message).toBe(
      `--succeeded-before must be an age such as 7d, 12h, 30m, 45s or 2w, or a date such as 2026-01-31, got "${value}"`,
    );
  });
});
