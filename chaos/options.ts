import { parseArgs } from 'node:util';
import { SESSION_MAX_WORKERS } from './pooler-sizing.js';

export interface ChaosOptions {
  jobs: number;
  /** Seconds of chaos while the jobs are fed in at a steady rate; 0: all jobs up front, chaos until done. */
  duration: number;
  workers: number;
  concurrency: number;
  /** Worker lease in ms: short, so that a killed worker's jobs are rescued within the run. */
  lease: number;
  killEvery: { min: number; max: number };
  /** Seconds PostgreSQL stays down during its restart. */
  outage: number;
  pgRestart: boolean;
  /** Restart by immediate shutdown (a crash: no checkpoint, recovery at start) instead of a fast one. */
  pgCrash: boolean;
  connectionKill: boolean;
  maxAttempts: number;
  /** Seconds from the start of the chaos until unfinished jobs count as hung. */
  timeout: number;
  seed: number;
  port: number | undefined;
  dataDir: string;
  verbose: boolean;
  /**
   * How handlers write their side effect: on the pool ('plain', at least
   * once), inside ctx.transaction() with the job's success ('transactional',
   * exactly once), or each job one way by its seq's parity ('both').
   */
  handlers: HandlerMode;
  /**
   * The share of the jobs (0 to 1) that are parents: each ctx.invoke()s one
   * child that does the work (the side effect, in the seq's handler mode) and
   * returns the child's result. Which seqs are parents is drawn from the seed.
   */
  invoke: number;
  /**
   * A PgBouncer in this pool mode between the workers (and the enqueuer) and
   * PostgreSQL, or null for direct connections. LISTEN, migrations, the
   * checks and the connection kill go straight to the server.
   */
  pooler: PoolerMode | null;
}

export type PoolerMode = 'transaction' | 'session';
const POOLER_MODES: readonly PoolerMode[] = ['transaction', 'session'];

export type HandlerMode = 'plain' | 'transactional' | 'both';
const HANDLER_MODES: readonly HandlerMode[] = ['plain', 'transactional', 'both'];

export class UsageError extends Error {}

export const USAGE = `Usage: npm run chaos -- [options]

Starts its own PostgreSQL, runs jobs on worker processes that are killed with
SIGKILL every few seconds, restarts PostgreSQL once and kills every connection
once, then checks from the database that no job was lost or succeeded twice,
that every re-run side effect of a plain handler is explained by an
interrupted attempt, and that a transactional handler's happened exactly once.

  --jobs N            jobs to run (default 20000)
  --duration S        0 (default): enqueue every job first and keep the chaos going until all
                      have finished; S > 0: feed the jobs in over S seconds of chaos, then let
                      the rest finish calmly
  --ci                the short run of .ci/run: --jobs 4500 --duration 30 --outage 2
                      (later flags still override it)
  --workers N         worker processes (default 3)
  --concurrency N     jobs each worker runs at once (default 10)
  --lease MS          worker lease (default 1500)
  --kill-every A-B    seconds between SIGKILLs, drawn uniformly (default 2-5)
  --outage S          seconds PostgreSQL stays down when restarted (default 5)
  --pg-crash          restart PostgreSQL by an immediate shutdown (SIGQUIT: a crash, with WAL
                      recovery at start) rather than a fast one; workers then commit synchronously
  --no-pg-restart     skip the PostgreSQL restart
  --no-conn-kill      skip the pg_terminate_backend round
  --max-attempts N    attempts per job (default 25)
  --handlers MODE     how handlers write their one side-effect row: plain (on the pool: a run the
                      library starts again writes it again), transactional (in ctx.transaction(),
                      committed with the job's success: exactly once), or both (default: odd seqs
                      transactional, even ones plain, under the same kills)
  --invoke SHARE      make SHARE of the jobs (0 to 1; default 0, 1 all) parents: each works a little,
                      ctx.invoke()s one child job that does the work above (its side effect in
                      the seq's handler mode) and returns the child's result. Then checked too:
                      each parent finished, has exactly one child row (invoked_by) that its
                      invoke step names, each child ran once or re-ran only where its
                      interrupted executions explain it, and each parent returned its child's
                      result. Which seqs are parents is drawn from the seed
  --pooler MODE       run the workers and the enqueuer through a PgBouncer (/usr/sbin/pgbouncer,
                      at its defaults) in MODE, transaction or session, started in front of the
                      embedded server: JobsModule gets pooler: MODE and the direct URL as
                      directConnection (LISTEN, migrations). It rides out the restart by itself,
                      answering again up to server_login_retry (15 s) after the server; the
                      connection kill then hits its server connections. In session mode each
                      worker keeps to a share of its 20 server connections, so at most ${SESSION_MAX_WORKERS}
                      workers. Its log is kept as <data-dir>/pgbouncer.log (default: direct)
  --timeout S         seconds after the chaos starts before unfinished jobs count as hung
                      (default 900, or duration + 180)
  --seed N            replay a run's job mix and the delays between kills (default: random,
                      printed; which worker dies still depends on which are up at the time)
  --port N            PostgreSQL port (default: a free one, kept across the restart)
  --data-dir PATH     where the embedded cluster lives (default .jobs-data/chaos)
  --verbose           copy worker logs to stderr (they always go to <data-dir>/run.log)
  -h, --help          this text

Exit status: 0 every check passed, 1 a check failed or the run broke, 2 bad usage,
130 interrupted.`;

const CI_PRESET = ['--jobs', '4500', '--duration', '30', '--outage', '2'];

/** Returns null when help was asked for. */
export function parseOptions(argv: readonly string[], cwd = process.cwd()): ChaosOptions | null {
  const args = argv.includes('--ci') ? [...CI_PRESET, ...argv.filter((a) => a !== '--ci')] : [...argv];
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        jobs: { type: 'string' },
        duration: { type: 'string' },
        workers: { type: 'string' },
        concurrency: { type: 'string' },
        lease: { type: 'string' },
        'kill-every': { type: 'string' },
        outage: { type: 'string' },
        'pg-crash': { type: 'boolean' },
        'no-pg-restart': { type: 'boolean' },
        'no-conn-kill': { type: 'boolean' },
        'max-attempts': { type: 'string' },
        handlers: { type: 'string' },
        invoke: { type: 'string' },
        pooler: { type: 'string' },
        timeout: { type: 'string' },
        seed: { type: 'string' },
        port: { type: 'string' },
        'data-dir': { type: 'string' },
        verbose: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return null;

  const str = (name: string) => values[name] as string | undefined;
  const duration = number(str('duration'), 'duration', 0, { min: 0 });
  const killEvery = range(str('kill-every') ?? '2-5');
  const workers = number(str('workers'), 'workers', 3, { min: 1, integer: true });
  const pooler = str('pooler') === undefined ? null : poolerMode(str('pooler')!);
  if (pooler === 'session' && workers > SESSION_MAX_WORKERS) {
    throw new UsageError(
      `--pooler session fits at most ${SESSION_MAX_WORKERS} workers in PgBouncer's 20 server connections, got --workers ${workers}`,
    );
  }
  return {
    jobs: number(str('jobs'), 'jobs', 20_000, { min: 1, integer: true }),
    duration,
    workers,
    concurrency: number(str('concurrency'), 'concurrency', 10, { min: 1, integer: true }),
    lease: number(str('lease'), 'lease', 1_500, { min: 300, integer: true }),
    killEvery,
    outage: number(str('outage'), 'outage', 5, { min: 0 }),
    pgRestart: !values['no-pg-restart'],
    pgCrash: Boolean(values['pg-crash']),
    connectionKill: !values['no-conn-kill'],
    maxAttempts: number(str('max-attempts'), 'max-attempts', 25, { min: 1, integer: true }),
    timeout: number(str('timeout'), 'timeout', duration > 0 ? duration + 180 : 900, { min: 1 }),
    seed: number(str('seed'), 'seed', Math.floor(Math.random() * 2 ** 31), { min: 0, integer: true }),
    port:
      str('port') === undefined ? undefined : number(str('port'), 'port', 0, { min: 1, max: 65_535, integer: true }),
    dataDir: str('data-dir') ?? `${cwd}/.jobs-data/chaos`,
    verbose: Boolean(values.verbose),
    handlers: handlerMode(str('handlers') ?? 'both'),
    invoke: number(str('invoke'), 'invoke', 0, { min: 0, max: 1 }),
    pooler,
  };
}

function number(
  text: string | undefined,
  name: string,
  fallback: number,
  { min, max = Number.MAX_SAFE_INTEGER, integer = false }: { min: number; max?: number; integer?: boolean },
): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    throw new UsageError(`--${name} wants ${integer ? 'an integer' : 'a number'}, got "${text}"`);
  }
  if (value < min || value > max) {
    const bounds = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `between ${min} and ${max}`;
    throw new UsageError(`--${name} must be ${bounds}, got ${value}`);
  }
  return value;
}

function handlerMode(text: string): HandlerMode {
  if (!(HANDLER_MODES as readonly string[]).includes(text)) {
    throw new UsageError(`--handlers wants one of ${HANDLER_MODES.join(', ')}, got "${text}"`);
  }
  return text as HandlerMode;
}

function poolerMode(text: string): PoolerMode {
  if (!(POOLER_MODES as readonly string[]).includes(text)) {
    throw new UsageError(`--pooler wants one of ${POOLER_MODES.join(', ')}, got "${text}"`);
  }
  return text as PoolerMode;
}

function range(text: string): { min: number; max: number } {
  const match = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(text);
  const [min, max] = match ? [Number(match[1]), Number(match[2])] : [NaN, NaN];
  if (!match || min <= 0 || max < min) {
    throw new UsageError(`--kill-every wants seconds as MIN-MAX with 0 < MIN <= MAX (e.g. 2-5), got "${text}"`);
  }
  return { min, max };
}
