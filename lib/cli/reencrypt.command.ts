import { positionals } from './cli-args.js';
import type { CliCommand } from './cli-command.js';
import { withServices } from './cli-context.js';
import { plural } from './cli-output.js';

/** Rewrites encrypted jobs' values under older keys with the current key (JobsAdmin.reencrypt). */
export const reencryptCommand: CliCommand = {
  name: 'reencrypt',
  usage: '',
  summary:
    're-seal encrypted jobs under older keys with the current key (keys from JOBS_ENCRYPTION_KEYS, JOBS_ENCRYPTION_CURRENT), in small rounds',
  async run(parsed, io) {
    positionals(parsed, []);
    await withServices(io.target(), io.out, async ({ admin, out }) => {
      out.result(
        await admin.reencrypt(),
        (r) =>
          `re-sealed ${plural(r.values, 'value')} of ${plural(r.jobs, 'encrypted job')} with key '${r.current}' in ${plural(r.rounds, 'round')}` +
          (r.unreadable
            ? `; ${plural(r.unreadable, 'value')} left as they are (sealed with a key not in JOBS_ENCRYPTION_KEYS)`
            : ''),
      );
    });
  },
};
