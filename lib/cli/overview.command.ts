import {
  BATCH_STATES,
  JOB_LIST_STATES,
  workerView,
  type BatchPage,
  type JobCounts,
  type ReplicaLag,
  type StateCounts,
  type Throughput,
  type WorkerView,
} from '../model/index.js';
import { idValue, integerOption, pastTime, positionals, statesOption, stringOption, UsageError } from './cli-args.js';
import type { CliCommand } from './cli-command.js';
import { withServices } from './cli-context.js';
import { table, time } from './cli-output.js';

const STATES: ReadonlyArray<keyof StateCounts> = JOB_LIST_STATES;

function countsText(counts: JobCounts): string {
  const row = (name: string, c: StateCounts) => [name, ...STATES.map((s) => String(c[s]))];
  const rows = Object.keys(counts.queues)
    .sort()
    .map((q) => row(q, counts.queues[q]!));
  return [
    table(['QUEUE', ...STATES.map((s) => s.toUpperCase())], [...rows, row('(all)', counts.total)]),
    `finished states: jobs created since ${time(counts.since)}`,
  ].join('\n');
}

function batchesText(page: BatchPage): string {
  if (page.batches.length === 0) return 'no batches match';
  const text = table(
    ['ID', 'NAME', 'STATE', 'TOTAL', 'PENDING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'SKIPPED', 'CREATED'],
    page.batches.map((b) => [
      b.id,
      b.name ?? '-',
      b.state,
      String(b.total),
      String(b.pending),
      String(b.succeeded),
      String(b.failed),
      String(b.cancelled),
      String(b.skipped),
      time(b.createdAt),
    ]),
  );
  return page.next ? `${text}\nmore: --before ${page.next}` : text;
}

function throughputText(t: Throughput): string {
  const queues = Object.keys(t.queues).sort();
  if (queues.length === 0) return `no jobs ended between ${time(t.since)} and ${time(t.until)}`;
  const rows = queues.map((q) => {
    const points = t.queues[q]!;
    const sum = (k: 'succeeded' | 'failed') => points.reduce((n, p) => n + p[k], 0);
    const last = points[points.length - 1]!;
    const busiest = Math.max(...points.map((p) => p.succeeded + p.failed));
    return [q, String(sum('succeeded')), String(sum('failed')), String(busiest), `${last.succeeded}/${last.failed}`];
  });
  return [
    table(['QUEUE', 'SUCCEEDED', 'FAILED', 'BUSIEST MINUTE', 'THIS MINUTE (OK/FAILED)'], rows),
    `from ${time(t.since)} to ${time(t.until)}`,
  ].join('\n');
}

function lagText(lag: ReplicaLag | null): string {
  if (!lag) return 'reads go to the primary (no --replica-url or JOBS_REPLICA_URL)';
  if (!lag.standby) return 'reads go to the replica, which is not a streaming standby: its lag cannot be measured';
  const behind =
    lag.ms === null ? 'behind by an unknown time' : lag.ms === 0 ? 'up to date' : `${lag.ms} ms behind the primary`;
  const paused = lag.replayPaused ? '; its replay is paused' : '';
  return `reads go to the replica: ${behind} (${lag.bytes ?? '?'} bytes of WAL to replay)${paused}, measured ${time(lag.measuredAt)}`;
}

function workersText(workers: readonly WorkerView[]): string {
  if (workers.length === 0) return 'no worker has reported in the last hour';
  return table(
    ['ID', 'HOST', 'PID', 'QUEUES', 'RUNNING', 'SLOTS', 'CONNECTIONS', 'STARTED', 'LAST HEARTBEAT', 'ALIVE'],
    workers.map((w) => [
      w.id,
      w.host,
      String(w.pid),
      w.queues === 'all' ? 'all' : w.queues.join(','),
      String(w.active),
      String(w.concurrency),
      w.connections ? `${w.connections.open ?? '?'}/${w.connections.max}` : '-',
      time(w.startedAt),
      time(w.lastHeartbeat),
      w.alive ? 'yes' : w.stoppedAt ? 'stopped' : 'no',
    ]),
  );
}

export const overviewCommands: CliCommand[] = [
  {
    name: 'stats',
    usage: '[--since <age|date>]',
    summary: 'jobs by queue and state (finished states: jobs created since --since, default 24h)',
    options: { since: { type: 'string' } },
    async run(parsed, io) {
      positionals(parsed, []);
      const since = stringOption(parsed.options, 'since');
      const options = since === undefined ? {} : { since: pastTime('since', since, Date.now()) };
      await withServices(io.target(), io.out, async ({ monitor, out }) => {
        const counts = await monitor.counts(options);
        out.result(counts, countsText);
      });
    },
  },
  {
    name: 'replica',
    usage: '',
    summary: 'where the read commands read (--replica-url or the primary) and how far the replica is behind',
    options: {},
    async run(parsed, io) {
      positionals(parsed, []);
      await withServices(io.target(), io.out, async ({ monitor, out }) => {
        const lag = await monitor.replicaLag();
        out.result({ source: lag ? 'replica' : 'primary', lag }, () => lagText(lag));
      });
    },
  },
  {
    name: 'workers',
    usage: '',
    summary: "worker processes running or stopped within the hour; queues 'all' for one that serves every queue",
    async run(parsed, io) {
      positionals(parsed, []);
      await withServices(io.target(), io.out, async ({ monitor, out }) => {
        out.result((await monitor.workers()).map(workerView), workersText);
      });
    },
  },
  {
    name: 'batches',
    usage: '[--state executing|succeeded|failed|cancelled] [--name <n>] [--limit <n>] [--before <id>]',
    summary: 'batches newest first, with their counts',
    options: {
      state: { type: 'string' },
      name: { type: 'string' },
      limit: { type: 'string' },
      before: { type: 'string' },
    },
    async run(parsed, io) {
      positionals(parsed, []);
      const o = parsed.options;
      const states = statesOption(o, 'state', BATCH_STATES);
      if (states && states.length > 1) throw new UsageError('batches: give --state once');
      const filter = {
        state: states?.[0],
        name: stringOption(o, 'name'),
        limit: integerOption(o, 'limit'),
        before: idValue('--before', stringOption(o, 'before')),
      };
      await withServices(io.target(), io.out, async ({ admin, out }) => {
        const page = await admin.listBatches(filter);
        out.result(page, batchesText);
      });
    },
  },
  {
    name: 'throughput',
    usage: '[--minutes <n>] [--queue <q>]',
    summary: 'jobs succeeded and failed per queue over the last minutes (default 60); --json has each minute',
    options: { minutes: { type: 'string' }, queue: { type: 'string' } },
    async run(parsed, io) {
      positionals(parsed, []);
      const o = parsed.options;
      const options = { minutes: integerOption(o, 'minutes'), queue: stringOption(o, 'queue') };
      await withServices(io.target(), io.out, async ({ admin, out }) => {
        out.result(await admin.throughput(options), throughputText);
      });
    },
  },
];
