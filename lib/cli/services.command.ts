import type { ServiceInfo } from '../model/index.js';
import { UsageError } from './cli-args.js';
import type { CliCommand } from './cli-command.js';
import { withServices } from './cli-context.js';
import { table, time } from './cli-output.js';

function servicesText(services: readonly ServiceInfo[]): string {
  if (services.length === 0) return 'no services';
  return table(
    ['SERVICE', 'BUILD IN FORCE', 'SINCE', 'BUILDS (LIVE INSTANCES)', 'SCHEDULES', 'LIMITS'],
    services.map((s) => [
      s.service,
      s.ownerBuild,
      time(s.since),
      s.builds.map((b) => `${b.build} (${b.instances})`).join(', '),
      String(s.schedules),
      String(s.limits),
    ]),
  );
}

export const servicesCommand: CliCommand = {
  name: 'services',
  usage: '[forget <service>]',
  summary: "the services sharing the schema and their builds; 'forget' releases a retired service's declarations",
  async run(parsed, io) {
    const [verb, name, extra] = parsed.args;
    if (verb === undefined) {
      await withServices(io.target(), io.out, async ({ admin, out }) => {
        out.result(await admin.services(), servicesText);
      });
      return;
    }
    if (verb !== 'forget' || name === undefined || extra !== undefined) {
      throw new UsageError('services takes no argument, or: services forget <service>');
    }
    await withServices(io.target(), io.out, async ({ admin, out }) => {
      const forgotten = await admin.forgetService(name);
      out.result(
        forgotten,
        (f) => `forgot service ${name}: ${f.schedules} schedule(s) and ${f.limits} limit(s) have no owner now`,
      );
    });
  },
};
