import { JobsError, type LimitInfo, type QueueInfo, type RateLimit, type ScheduleInfo } from '../model/index.js';
import { stringOption, UsageError, type ParsedCommand } from './cli-args.js';
import type { CliCommand, CliIo } from './cli-command.js';
import { withServices } from './cli-context.js';
import { table, time } from './cli-output.js';

function schedulesText(schedules: readonly ScheduleInfo[]): string {
  if (schedules.length === 0) return 'no schedules';
  return table(
    ['NAME', 'JOB', 'CRON', 'TIME ZONE', 'SOURCE', 'SERVICE', 'PAUSED', 'NEXT RUN', 'LAST RUN', 'LAST STATE'],
    schedules.map((s) => [
      s.name,
      s.jobName,
      s.cron,
      s.timeZone,
      s.source,
      s.service ?? '-',
      s.paused ? 'yes' : 'no',
      time(s.nextRunAt),
      time(s.lastRunAt),
      s.lastJobState ?? '-',
    ]),
  );
}

/**
 * What pause/resume act on: `--schedule <name>` / `--queue <name>`, or the
 * same as two words (`pause schedule nightly`). A bare name is refused: a
 * queue and a schedule often share one.
 */
function pauseTarget(parsed: ParsedCommand): { kind: 'schedule' | 'queue'; name: string } {
  const flags = (['schedule', 'queue'] as const)
    .map((kind) => ({ kind, name: stringOption(parsed.options, kind) }))
    .filter((t): t is { kind: 'schedule' | 'queue'; name: string } => t.name !== undefined);
  const [word, name, extra] = parsed.args;
  if (flags.length === 1 && parsed.args.length === 0) return flags[0]!;
  if (flags.length === 0 && (word === 'schedule' || word === 'queue') && name !== undefined && extra === undefined) {
    return { kind: word, name };
  }
  throw new UsageError(
    `${parsed.command} needs one target: --schedule <name> or --queue <name> (or: ${parsed.command} schedule <name>)`,
  );
}

function limitText<T>(limit: LimitInfo<T>, show: (v: T) => string): string {
  return limit.value === null ? '-' : `${show(limit.value)} (${limit.source})`;
}

const rate = (r: RateLimit) => `${r.max}/${r.per}ms`;

function queuesText(queues: readonly QueueInfo[]): string {
  if (queues.length === 0) return 'no queues';
  const rows: string[][] = [];
  for (const q of queues) {
    rows.push([
      q.name,
      q.service ?? '-',
      q.paused ? 'yes' : 'no',
      limitText(q.concurrency, String),
      limitText(q.rateLimit, rate),
      String(q.active),
      String(q.queued),
      String(q.scheduled),
      String(q.waiting),
    ]);
    // A job name's own limits, under its queue.
    for (const j of q.jobs) {
      rows.push([
        `  ${j.name}`,
        j.service ?? '-',
        '',
        limitText(j.concurrency, String),
        limitText(j.rateLimit, rate),
        '',
        '',
        '',
        '',
      ]);
    }
    // Its groups' limits: the default for each group, then the groups' own.
    const { concurrency, rateLimit } = q.groups;
    if (concurrency !== null || rateLimit !== null) {
      const each = (text: string | null) => (text === null ? '-' : `${text} (code)`);
      const limits = [each(concurrency === null ? null : String(concurrency)), each(rateLimit && rate(rateLimit))];
      rows.push(['  each group', '', '', ...limits, '', '', '', '']);
    }
    for (const g of q.groups.overrides) {
      rows.push([`  group ${g.group}`, '', '', `${g.concurrency} (runtime)`, '', '', '', '', '']);
    }
  }
  return table(
    ['QUEUE', 'SERVICE', 'PAUSED', 'CONCURRENCY', 'RATE LIMIT', 'ACTIVE', 'QUEUED', 'SCHEDULED', 'WAITING'],
    rows,
  );
}

async function pauseOrResume(parsed: ParsedCommand, io: CliIo, pause: boolean): Promise<void> {
  const target = pauseTarget(parsed);
  await withServices(io.target(), io.out, async ({ admin, out }) => {
    if (target.kind === 'queue') {
      await (pause ? admin.pauseQueue(target.name) : admin.resumeQueue(target.name));
      out.result({ queue: target.name, paused: pause }, () => `${pause ? 'paused' : 'resumed'} queue ${target.name}`);
      return;
    }
    const info = pause ? await admin.pauseSchedule(target.name) : await admin.resumeSchedule(target.name);
    if (!info) throw new JobsError(`${parsed.command}: schedule "${target.name}" disappeared meanwhile.`);
    out.result(info, (s) =>
      s.paused ? `paused schedule ${s.name}` : `resumed schedule ${s.name}; next run ${time(s.nextRunAt)}`,
    );
  });
}

const TARGET_OPTIONS = { schedule: { type: 'string' }, queue: { type: 'string' } } as const;

export const scheduleCommands: CliCommand[] = [
  {
    name: 'queues',
    usage: '',
    summary: 'every queue with its limits (and where each came from), paused flag and live counts',
    async run(parsed, io) {
      if (parsed.args.length) throw new UsageError(`queues: unexpected argument "${parsed.args[0]}"`);
      await withServices(io.target(), io.out, async ({ admin, out }) => {
        out.result(await admin.listQueues(), queuesText);
      });
    },
  },
  {
    name: 'schedules',
    usage: '',
    summary: 'every schedule with its next and last run',
    async run(parsed, io) {
      if (parsed.args.length) throw new UsageError(`schedules: unexpected argument "${parsed.args[0]}"`);
      await withServices(io.target(), io.out, async ({ admin, out }) => {
        out.result(await admin.listSchedules(), schedulesText);
      });
    },
  },
  {
    name: 'pause',
    usage: '--schedule <name> | --queue <name>',
    summary: 'stop a schedule ticking, or a queue being claimed on every instance (running jobs finish)',
    options: TARGET_OPTIONS,
    run: (parsed, io) => pauseOrResume(parsed, io, true),
  },
  {
    name: 'resume',
    usage: '--schedule <name> | --queue <name>',
    summary: 'undo pause; a schedule ticks again from the next tick after now',
    options: TARGET_OPTIONS,
    run: (parsed, io) => pauseOrResume(parsed, io, false),
  },
];
