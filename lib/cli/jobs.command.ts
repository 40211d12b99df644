import {
  CANCEL_STATES,
  JOB_LIST_STATES,
  JobsError,
  RETRY_STATES,
  type DependencyEdge,
  type JobDetail,
  type JobListState,
  type JobSearchPage,
} from '../model/index.js';
import {
  idValue,
  integerOption,
  positionals,
  statesOption,
  stringOption,
  UsageError,
  type OptionValues,
  type ParsedCommand,
} from './cli-args.js';
import type { CliCommand } from './cli-command.js';
import { withServices } from './cli-context.js';
import { fields, plural, short, table, time } from './cli-output.js';

const FILTER_OPTIONS = {
  state: { type: 'string', multiple: true },
  queue: { type: 'string' },
  name: { type: 'string' },
  batch: { type: 'string' },
} as const;

/** The filter options lists and bulk actions read (--state may repeat or list states with commas). */
function filterOptions<S extends JobListState>(options: OptionValues, states: readonly S[]) {
  return {
    state: statesOption(options, 'state', states),
    queue: stringOption(options, 'queue'),
    name: stringOption(options, 'name'),
    batchId: idValue('--batch', stringOption(options, 'batch')),
  };
}

/** `<id>` or `--all` with filters: exactly one of them. */
function oneOrAll(parsed: ParsedCommand): string | null {
  const all = parsed.options.all === true;
  if (all && parsed.args.length) throw new UsageError(`${parsed.command}: give <id> or --all, not both`);
  if (all) return null;
  const [id] = positionals(parsed, ['id']);
  if (['state', 'queue', 'name', 'batch'].some((o) => parsed.options[o] !== undefined)) {
    throw new UsageError(`${parsed.command}: --state, --queue, --name and --batch go with --all`);
  }
  return idValue('<id>', id!);
}

function jobRows(page: JobSearchPage): string {
  if (page.jobs.length === 0) return 'no jobs match';
  const rows = page.jobs.map((j) => [
    j.id,
    j.state === 'queued' && j.runAt.getTime() > Date.now() ? 'scheduled' : j.state,
    j.queue,
    j.name,
    `${j.attempt}/${j.maxAttempts}`,
    time(j.createdAt),
    short(j.lastError?.message),
  ]);
  const text = table(['ID', 'STATE', 'QUEUE', 'NAME', 'ATTEMPT', 'CREATED', 'LAST ERROR'], rows);
  return page.next ? `${text}\nmore: --before ${page.next}` : text;
}

function edgeRows(edges: readonly DependencyEdge[]): string {
  return table(
    ['KIND', 'ID', 'NAME', 'STATE', 'ON', 'PARENT OUTCOME'],
    edges.map((e) => [e.kind, e.other.id, e.other.name ?? '-', e.other.state, e.on, e.parentOutcome ?? '-']),
  );
}

function detailText(job: JobDetail): string {
  const parts = [
    fields([
      ['id', job.id],
      ['name', job.name],
      ['queue', job.queue],
      ['state', job.cancelRequested && job.state === 'active' ? 'active (cancel requested)' : job.state],
      ['attempt', `${job.attempt}/${job.maxAttempts}`],
      ['priority', String(job.priority)],
      ['run at', time(job.runAt)],
      ['created', time(job.createdAt)],
      ['started', time(job.startedAt)],
      ['completed', time(job.completedAt)],
      ['progress', job.progress === null ? '-' : `${Math.round(job.progress * 100)}% ${job.progressMessage ?? ''}`],
      ['worker', job.workerId ?? '-'],
      ['batch', job.batch ? `${job.batch.id} ${job.batch.name ?? ''} (${job.batch.state})` : '-'],
      ['invoked by', job.invokedBy ?? '-'],
      ['last error', job.lastError ? `${job.lastError.name}: ${job.lastError.message}` : '-'],
      ['payload', JSON.stringify(job.payload)],
      ['result', job.result === null ? '-' : JSON.stringify(job.result)],
    ]),
  ];
  if (job.executions.length) {
    parts.push(
      '\nattempts:',
      table(
        ['#', 'STATE', 'WORKER', 'STARTED', 'ENDED', 'ERROR'],
        job.executions.map((e) => [
          String(e.attempt),
          e.state,
          e.workerId ?? '-',
          time(e.startedAt),
          time(e.endedAt),
          short(e.error?.message),
        ]),
      ),
    );
    if (job.moreExecutions)
      parts.push(`(the latest ${job.executions.length} attempts; older ones: JobQueue.executions())`);
  }
  if (job.steps.length) {
    parts.push(
      '\nsteps:',
      table(
        ['NAME', 'KIND', 'ATTEMPT', 'FINISHED', 'WAKES'],
        job.steps.map((st) => [st.name, st.kind, String(st.attempt), time(st.completedAt), time(st.wakeAt)]),
      ),
    );
  }
  if (job.parents.length) parts.push('\nwaits on:', edgeRows(job.parents));
  if (job.invoked.length) {
    parts.push(
      '\ninvoked (ctx.invoke):',
      table(
        ['CHILD', 'NAME', 'STATE'],
        job.invoked.map((c) => [c.id, c.name, c.state]),
      ),
    );
  }
  if (job.children.length) {
    parts.push('\nwaited on by:', edgeRows(job.children));
    if (job.moreChildren) parts.push(`(more children than the ${job.children.length} shown)`);
  }
  return parts.join('\n');
}

export const jobCommands: CliCommand[] = [
  {
    name: 'list',
    usage:
      '[--state <s>]… [--queue <q>] [--name <n>] [--name-contains <text>] [--batch <id>] [--id <prefix>] [--limit <n>] [--before <id>]',
    summary: 'jobs newest first; states: waiting, queued, scheduled, active, succeeded, failed, cancelled, skipped',
    options: {
      ...FILTER_OPTIONS,
      'name-contains': { type: 'string' },
      id: { type: 'string' },
      limit: { type: 'string' },
      before: { type: 'string' },
    },
    async run(parsed, io) {
      positionals(parsed, []);
      const o = parsed.options;
      const idPrefix = stringOption(o, 'id');
      if (idPrefix !== undefined && !/^[0-9a-f-]{1,36}$/i.test(idPrefix)) {
        throw new UsageError(`--id must be the start of a job id (hex digits and dashes), got "${idPrefix}"`);
      }
      const search = {
        ...filterOptions(o, JOB_LIST_STATES),
        nameContains: stringOption(o, 'name-contains'),
        idPrefix,
        limit: integerOption(o, 'limit'),
        before: idValue('--before', stringOption(o, 'before')),
      };
      await withServices(io.target(), io.out, async ({ admin, out }) => {
        const page = await admin.search(search);
        out.result(page, jobRows);
      });
    },
  },
  {
    name: 'show',
    usage: '<id>',
    summary: 'one job: its attempts, what it waits on, what waits on it, its batch',
    async run(parsed, io) {
      const id = idValue('<id>', positionals(parsed, ['id'])[0]!);
      await withServices(io.target(), io.out, async ({ admin, out }) => {
        const job = await admin.detail(id);
        if (!job) {
          throw new JobsError(
            `show ${id}: no such job. Potential fix: list --id <prefix> finds jobs by the start of their id.`,
          );
        }
        out.result(job, detailText);
      });
    },
  },
  {
    name: 'retry',
    usage:
      '<id> [--reset-steps | --from-step <name>] | --all [--state failed|cancelled|skipped]… [--queue <q>] [--name <n>] [--batch <id>]',
    summary:
      'queue ended jobs again with fresh attempts (--all: the failed ones, unless --state says otherwise); ' +
      'finished steps stay done unless --reset-steps, or --from-step <name> (that step and the ones recorded after it run again)',
    options: {
      ...FILTER_OPTIONS,
      all: { type: 'boolean' },
      'reset-steps': { type: 'boolean' },
      'from-step': { type: 'string' },
    },
    async run(parsed, io) {
      const id = oneOrAll(parsed);
      const resetSteps = parsed.options['reset-steps'] === true;
      const fromStep = stringOption(parsed.options, 'from-step');
      if (resetSteps && !id) throw new UsageError('retry: --reset-steps goes with one <id>, not with --all');
      if (fromStep !== undefined && !id) throw new UsageError('retry: --from-step goes with one <id>, not with --all');
      if (fromStep !== undefined && resetSteps) {
        throw new UsageError('retry: give --reset-steps (every step runs again) or --from-step <name>, not both');
      }
      const filter = filterOptions(parsed.options, RETRY_STATES);
      await withServices(io.target(), io.out, async ({ admin, jobs, out }) => {
        if (id) {
          await jobs.retry(id, fromStep === undefined ? { resetSteps } : { fromStep });
          out.result({ id, state: 'queued', ...(fromStep === undefined ? {} : { fromStep }) }, () =>
            fromStep === undefined ? `queued ${id} again` : `queued ${id} again from step ${fromStep}`,
          );
          return;
        }
        const result = await admin.retryAll(filter);
        out.result(result, (r) => `queued ${plural(r.count, 'job')} again`);
      });
    },
  },
  {
    name: 'cancel',
    usage: '<id> | --all [--state waiting|queued|scheduled|active]… [--queue <q>] [--name <n>] [--batch <id>]',
    summary: 'cancel waiting and queued jobs now; running ones are asked to stop',
    options: { ...FILTER_OPTIONS, all: { type: 'boolean' } },
    async run(parsed, io) {
      const id = oneOrAll(parsed);
      const filter = filterOptions(parsed.options, CANCEL_STATES);
      await withServices(io.target(), io.out, async ({ admin, jobs, out }) => {
        if (id) {
          await jobs.cancel(id);
          const state = (await jobs.get(id))?.state ?? 'cancelled';
          out.result({ id, state }, () =>
            state === 'active' ? `asked ${id} to stop; it ends cancelled when its handler returns` : `cancelled ${id}`,
          );
          return;
        }
        const result = await admin.cancelAll(filter);
        out.result(result, (r) => `cancelled ${plural(r.cancelled, 'job')}, asked ${r.requested} running to stop`);
      });
    },
  },
  {
    name: 'delete',
    usage: '<id>',
    summary: 'delete one ended job and its history',
    async run(parsed, io) {
      const id = idValue('<id>', positionals(parsed, ['id'])[0]!);
      await withServices(io.target(), io.out, async ({ admin, out }) => {
        out.result(await admin.delete(id), (d) => `deleted ${d.id} (${d.state})`);
      });
    },
  },
  {
    name: 'run-now',
    usage: '<id> | --schedule <name>',
    summary: 'make a job queued for later due now, or start one run of a schedule now',
    options: { schedule: { type: 'string' } },
    async run(parsed, io) {
      const schedule = stringOption(parsed.options, 'schedule');
      const [given] = positionals(parsed, schedule === undefined ? ['id'] : []);
      const id = idValue('<id>', given);
      await withServices(io.target(), io.out, async ({ admin, out }) => {
        if (schedule !== undefined) {
          const { jobId } = await admin.runSchedule(schedule);
          out.result({ schedule, jobId }, () => `schedule ${schedule}: queued job ${jobId}`);
          return;
        }
        out.result(await admin.runNow(id!), (r) => `${r.id} is due now (was ${time(r.previousRunAt)})`);
      });
    },
  },
];
