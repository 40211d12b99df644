import type { PurgeOptions } from '../model/index.js';
import { integerOption, pastTime, positionals, stringOption, UsageError } from './cli-args.js';
import type { CliCommand } from './cli-command.js';
import { withServices } from './cli-context.js';
import { plural } from './cli-output.js';

const CUTOFFS = {
  'succeeded-before': 'succeededBefore',
  'failed-before': 'failedBefore',
  'cancelled-before': 'cancelledBefore',
  'skipped-before': 'skippedBefore',
} as const satisfies Record<string, keyof PurgeOptions>;

export const purgeCommand: CliCommand = {
  name: 'purge',
  usage:
    '[--succeeded-before <age|date>] [--failed-before …] [--cancelled-before …] [--skipped-before …] [--pause <ms>]',
  summary: 'delete finished jobs (and settled batches) that ended before an age such as 7d, in small rounds',
  options: {
    ...Object.fromEntries(Object.keys(CUTOFFS).map((k) => [k, { type: 'string' }])),
    pause: { type: 'string' },
  },
  async run(parsed, io) {
    positionals(parsed, []);
    const options: PurgeOptions = {};
    const now = Date.now();
    for (const [flag, field] of Object.entries(CUTOFFS)) {
      const value = stringOption(parsed.options, flag);
      if (value !== undefined) options[field] = pastTime(flag, value, now);
    }
    if (Object.keys(options).length === 0) {
      throw new UsageError(
        `purge needs at least one of ${Object.keys(CUTOFFS)
          .map((k) => `--${k}`)
          .join(', ')}`,
      );
    }
    const pause = integerOption(parsed.options, 'pause');
    await withServices(io.target(), io.out, async ({ admin, out }) => {
      out.result(await admin.purge(pause === undefined ? options : { ...options, pause }), (r) => {
        const jobs = Object.entries(r.jobs)
          .filter(([, n]) => n > 0)
          .map(([state, n]) => `${n} ${state}`);
        return (
          `deleted ${jobs.length ? `${jobs.join(', ')} job(s)` : 'no jobs'} and ${plural(r.batches, 'batch', 'batches')}` +
          ` (${plural(r.batchMembers, 'member')}) in ${plural(r.rounds, 'round')}`
        );
      });
    });
  },
};
