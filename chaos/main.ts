/**
 * npm run chaos: the library under SIGKILLs, a PostgreSQL restart and a
 * connection kill, judged from the database afterwards. See USAGE in
 * options.ts and "The chaos suite" in docs/reference/guarantees.md.
 */
import 'reflect-metadata';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Module, type DynamicModule, type INestApplicationContext, type LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JobQueue, JobsModule, startEmbeddedPostgres, type EmbeddedPostgresHandle } from 'nestjs-durable-jobs';
import { ChaosChild, ChaosParent, ChaosWork, JOBS_SCHEMA } from './chaos-work.job.js';
import { evaluate } from './checks.js';
import {
  countSeqRange,
  firstSuccessAfter,
  installSuccessLog,
  jobFacts,
  progress,
  resetSchemas,
  runFigures,
  terminateBackends,
  type Progress,
} from './database.js';
import { WorkerFleet } from './fleet.js';
import { RunLog } from './log.js';
import { parseOptions, USAGE, UsageError, type ChaosOptions, type PoolerMode } from './options.js';
import { startChaosPooler, type ChaosPooler } from './pooler.js';
import { SESSION_ENQUEUER_MAX_CONNECTIONS, sessionWorkerMaxConnections } from './pooler-sizing.js';
import { Random } from './random.js';
import { formatReport, passed, seconds, type ConnectionKill, type PostgresRestart, type RunRecord } from './report.js';

const DATABASE = 'chaos';
const TICK_MS = 100;
const STATUS_EVERY_MS = 5_000;
/** How long the final SIGTERM waits before SIGKILL; it is the workers' shutdownGrace plus margin. */
const STOP_GRACE_MS = 10_000;
/** How long a due fault waits for all workers to be up before it settles for one. */
const FAULT_PATIENCE_MS = 10_000;
/** How long PgBouncer may take to answer again once the server is back from its restart. */
const POOLER_BACK_WITHIN_MS = 60_000;

class Interrupted extends Error {}

@Module({})
class EnqueuerModule {
  /** `url` is PgBouncer's when `pooler` is set, and `directUrl` the server's. */
  static forRoot(url: string, pooler: PoolerMode | null, directUrl: string): DynamicModule {
    return {
      module: EnqueuerModule,
      imports: [
        JobsModule.forRoot({
          connection: url,
          ...(pooler ? { pooler, directConnection: directUrl } : {}),
          // Its sessions count against PgBouncer's 20 server connections too (chaos/pooler-sizing.ts).
          ...(pooler === 'session' ? { maxConnections: SESSION_ENQUEUER_MAX_CONNECTIONS } : {}),
          schema: JOBS_SCHEMA,
          worker: { enabled: false },
          scheduler: { enabled: false },
        }),
      ],
      providers: [ChaosWork, ChaosParent, ChaosChild],
    };
  }
}

/** Nest's output goes to the run log, where the workers' goes too. */
function nestLogger(log: RunLog, source: string): LoggerService {
  const write =
    (level: string) =>
    (message: unknown, ...rest: unknown[]) =>
      log.write(source, `${level} ${String(message)}${rest.length ? ` ${rest.map(String).join(' ')}` : ''}`);
  return {
    log: write('LOG'),
    error: write('ERROR'),
    warn: write('WARN'),
    debug: write('DEBUG'),
    fatal: write('FATAL'),
  };
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(new Interrupted());
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Interrupted());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** The server's pid, from the cluster that startEmbeddedPostgres keeps in <dataDir>/pgdata. */
async function postmasterPid(dataDir: string): Promise<number> {
  const text = await fs.readFile(path.join(dataDir, 'pgdata', 'postmaster.pid'), 'utf8');
  const pid = parseInt(text, 10);
  if (!(pid > 0)) throw new Error(`no server pid in ${dataDir}/pgdata/postmaster.pid`);
  return pid;
}

async function run(options: ChaosOptions, abort: AbortSignal): Promise<number> {
  const setupStart = Date.now();
  await fs.mkdir(options.dataDir, { recursive: true });
  const log = new RunLog(path.join(options.dataDir, 'run.log'), options.verbose);
  // A previous --pooler run's copy (see the finally below) would pass for this run's.
  const poolerLog = path.join(options.dataDir, 'pgbouncer.log');
  await fs.rm(poolerLog, { force: true });
  const say = (message: string) => {
    process.stderr.write(`[chaos ${seconds(Date.now() - setupStart).padStart(7)}] ${message}\n`);
    log.write('chaos', message);
  };
  const pgLogger = { log: (m: string) => log.write('pg', m), warn: (m: string) => log.write('pg', m) };
  let server: EmbeddedPostgresHandle | null = null;
  let enqueuer: INestApplicationContext | null = null;
  let fleet: WorkerFleet | null = null;
  let pooler: ChaosPooler | null = null;
  // A Ctrl-C must not leave workers behind, whatever await we are in.
  const onAbort = () => fleet?.killAllNow();
  abort.addEventListener('abort', onAbort);
  try {
    say(`seed ${options.seed}; starting PostgreSQL in ${options.dataDir}`);
    server = await startEmbeddedPostgres({
      dataDir: options.dataDir,
      port: options.port,
      database: DATABASE,
      logger: pgLogger,
    });
    // The server's own URL: the checks, the progress polls and the connection kill always use it.
    const url = server.url;
    // Restarted on the same port, so that every worker's URL (and PgBouncer's upstream) stays valid.
    const port = Number(new URL(url).port);
    if (options.pooler) {
      pooler = await startChaosPooler(options.pooler, url);
      say(`PgBouncer (${options.pooler} mode) on port ${new URL(pooler.url).port}, pid ${pooler.pid}`);
    }
    /** Where the enqueuer and the workers connect. */
    const workUrl = pooler?.url ?? url;
    await resetSchemas(url);
    enqueuer = await NestFactory.createApplicationContext(EnqueuerModule.forRoot(workUrl, options.pooler, url), {
      logger: nestLogger(log, 'enqueuer'),
      abortOnError: false,
    });
    await installSuccessLog(url);
    const queue = enqueuer.get(JobQueue);

    // Two streams, so that the kill delays of a replay do not shift with --jobs.
    const mix = new Random(options.seed);
    const random = new Random(options.seed + 1);
    // Mostly short jobs, so the backlog moves; one in ten runs long enough for a SIGKILL to land mid-run.
    const workMs = Array.from({ length: options.jobs }, () =>
      mix.next() < 0.1 ? mix.int(100, 1_000) : mix.int(1, 10),
    );
    // --invoke: which seqs are parents, from a stream of their own (the mix and the kills replay as without).
    const invokeDraw = new Random(options.seed + 2);
    const parent = Array.from({ length: options.jobs }, () => options.invoke > 0 && invokeDraw.next() < options.invoke);
    const items = (from: number, to: number) =>
      workMs.slice(from, to).map((ms, k) => {
        const seq = from + k;
        const jobOptions = { maxAttempts: options.maxAttempts };
        return parent[seq]
          ? {
              job: ChaosParent,
              payload: { seq, ms, tx: transactional(seq), childMaxAttempts: options.maxAttempts },
              options: jobOptions,
            }
          : { job: ChaosWork, payload: { seq, ms, tx: transactional(seq) }, options: jobOptions };
      });
    const transactional = (seq: number) =>
      options.handlers === 'transactional' || (options.handlers === 'both' && seq % 2 === 1);
    let fed = 0;
    let enqueueErrors = 0;
    /** Enqueues seq [from, to), retrying through outages without ever writing a job twice. */
    const feed = async (from: number, to: number) => {
      for (;;) {
        try {
          await queue.enqueueMany(items(from, to));
          fed = to;
          return;
        } catch (error) {
          enqueueErrors++;
          log.write('chaos', `enqueue of seq ${from}..${to - 1} failed: ${(error as Error).message}`);
        }
        // The error may have come after the commit: look before writing them again.
        const present = await countSeqRange(url, from, to).catch(() => null);
        if (present === to - from) {
          fed = to;
          return;
        }
        if (present !== null && present > 0) {
          say(`DEFECT? enqueueMany of ${to - from} jobs wrote ${present} of them (it is all or none)`);
          fed = to;
          return;
        }
        await sleep(250, abort);
      }
    };

    if (options.duration === 0) {
      const t = Date.now();
      await feed(0, options.jobs);
      say(`enqueued ${options.jobs} jobs in ${seconds(Date.now() - t)}`);
    }

    fleet = new WorkerFleet({
      count: options.workers,
      databaseUrl: workUrl,
      pooler: options.pooler
        ? {
            mode: options.pooler,
            directUrl: url,
            maxConnections: options.pooler === 'session' ? sessionWorkerMaxConnections(options.workers) : null,
          }
        : null,
      lease: options.lease,
      concurrency: options.concurrency,
      // A crash of PostgreSQL undoes relaxed commits, and with them the record of runs that did happen.
      synchronousCommit: options.pgCrash,
      log,
    });
    say(`starting ${options.workers} workers`);
    const workersStart = Date.now();
    await fleet.start();
    // Timed from here: the feed rate and the fault schedule assume workers that can take the work.
    const chaosStart = Date.now();
    const setupMs = chaosStart - setupStart;
    say(`workers ready after ${seconds(chaosStart - workersStart)}; chaos begins`);

    // Mutated from callbacks, so kept in objects: TypeScript would narrow plain variables to their initial value.
    const faults: { pgRestart: PostgresRestart | string; connectionKill: ConnectionKill | string; error: unknown } = {
      pgRestart: options.pgRestart ? 'not reached (the jobs finished first)' : 'skipped (--no-pg-restart)',
      connectionKill: options.connectionKill ? 'not reached (the jobs finished first)' : 'skipped (--no-conn-kill)',
      error: null,
    };
    const pending = { restart: false, kill: false, feed: false, poll: false };
    const seen: { latest: Progress | null } = { latest: null };
    // A fault that throws (PostgreSQL not coming back) ends the run as broken.
    const inject = (what: 'restart' | 'kill', fault: () => Promise<void>) => {
      pending[what] = true;
      void fault()
        .catch((error: unknown) => void (faults.error ??= error))
        .finally(() => (pending[what] = false));
    };
    const restartPostgres = async () => {
      const requestedAt = new Date();
      const workersUp = fleet!.readyCount();
      if (options.pgCrash) {
        say('PostgreSQL: immediate shutdown (SIGQUIT to the postmaster)');
        process.kill(await postmasterPid(options.dataDir), 'SIGQUIT');
      } else {
        say('PostgreSQL: fast shutdown');
      }
      // Fast shutdown (SIGINT) unless the server already went: then it only waits for the exit.
      await server!.stop();
      const downAt = new Date();
      await sleep(options.outage * 1_000, abort);
      server = await startEmbeddedPostgres({ dataDir: options.dataDir, port, database: DATABASE, logger: pgLogger });
      const upAt = new Date();
      say(`PostgreSQL: up again after ${seconds(upAt.getTime() - downAt.getTime())} down`);
      // PgBouncer stays up through the restart and opens new server connections by itself: a
      // query through it shows when it does (or the run breaks, rather than waiting for the deadline).
      // Not at once: one login that failed while the server went down (a pool refilling) makes it
      // refuse every client for server_login_retry (15 s by default) before it tries again.
      let poolerBackAt: Date | null = null;
      if (pooler) {
        if (!pooler.alive()) throw new Error('PgBouncer did not survive the PostgreSQL restart');
        poolerBackAt = await pooler.serving(POOLER_BACK_WITHIN_MS);
        say(`PgBouncer: answering again ${seconds(poolerBackAt.getTime() - upAt.getTime())} after the server`);
      }
      faults.pgRestart = { requestedAt, workersUp, downAt, upAt, poolerBackAt, firstSuccessAt: null };
    };
    const killConnections = async () => {
      const at = new Date();
      const workersUp = fleet!.readyCount();
      const terminated = await terminateBackends(url);
      say(`pg_terminate_backend: ${terminated} backends`);
      faults.connectionKill = { at, workersUp, terminated, firstSuccessAt: null };
    };
    /** Mid-run: a share of the duration, or of the jobs finished when the chaos lasts until the end. */
    const reached = (fraction: number) =>
      options.duration > 0
        ? Date.now() - chaosStart >= fraction * options.duration * 1_000
        : (seen.latest?.topLevelDone ?? 0) >= fraction * options.jobs;
    // The kills often leave a worker or two starting (seconds each on a busy machine), and a fault
    // with no worker up proves little (a connection kill found 0 backends once). So a fault that is
    // due waits for every worker to be up, or, after FAULT_PATIENCE_MS, for any.
    const armedAt = { restart: 0, kill: 0 };
    const due = (fault: 'restart' | 'kill', fraction: number) => {
      if (!reached(fraction)) return false;
      armedAt[fault] ||= Date.now();
      const ready = fleet!.readyCount();
      return ready === options.workers || (ready > 0 && Date.now() - armedAt[fault] >= FAULT_PATIENCE_MS);
    };

    let lastPoll = 0;
    let lastStatus = Date.now();
    let nextKill = chaosStart + random.between(options.killEvery.min, options.killEvery.max) * 1_000;
    let chaosEnd: number | null = null;
    let allDone: number | null = null;
    const deadline = chaosStart + options.timeout * 1_000;

    for (;;) {
      if (abort.aborted) throw new Interrupted();
      if (faults.error) throw faults.error;
      const now = Date.now();
      const restartDone = typeof faults.pgRestart !== 'string';
      const killDone = typeof faults.connectionKill !== 'string';
      if (chaosEnd === null) {
        if (now >= nextKill) {
          fleet.killRandom(random);
          nextKill = now + random.between(options.killEvery.min, options.killEvery.max) * 1_000;
        }
        if (options.pgRestart && !restartDone && !pending.restart && due('restart', 1 / 3)) {
          inject('restart', restartPostgres);
        }
        // Not during the restart's outage: there would be no backend to terminate.
        const afterRestart = !options.pgRestart || restartDone;
        if (options.connectionKill && afterRestart && !killDone && !pending.kill && due('kill', 2 / 3)) {
          inject('kill', killConnections);
        }
      }
      if (options.duration > 0 && fed < options.jobs && !pending.feed) {
        const due = Math.min(options.jobs, Math.ceil((options.jobs * (now - chaosStart)) / (options.duration * 1_000)));
        if (due > fed) {
          pending.feed = true;
          void feed(fed, due)
            .catch((error: unknown) => void (faults.error ??= error))
            .finally(() => (pending.feed = false));
        }
      }
      if (!pending.poll && now - lastPoll >= 500) {
        pending.poll = true;
        lastPoll = now;
        void progress(url)
          .then((p) => (seen.latest = p))
          // PostgreSQL down or our connection killed: the next poll will tell.
          .catch(() => undefined)
          .finally(() => (pending.poll = false));
      }
      const latest = seen.latest;
      // Every job the run enqueued, and every child they invoked, has ended.
      const finished =
        fed === options.jobs && latest !== null && latest.topLevel === fed && latest.done === latest.total;
      // A fault that fell due, or is under way, still happens before the chaos ends.
      const faultOwed =
        pending.restart || pending.kill || (armedAt.restart && !restartDone) || (armedAt.kill && !killDone);
      if (chaosEnd === null && !faultOwed) {
        const over =
          options.duration > 0 ? now - chaosStart >= options.duration * 1_000 && fed === options.jobs : finished;
        if (over) {
          chaosEnd = now;
          say(finished ? 'every job finished; chaos over' : 'chaos over; letting the remaining jobs finish');
        }
      }
      if (chaosEnd !== null && finished) {
        allDone = now;
        break;
      }
      if (now >= deadline) {
        chaosEnd ??= now;
        say(
          `deadline: ${options.timeout} s after the chaos began, ${latest ? fed - latest.topLevelDone : '?'} jobs unfinished`,
        );
        break;
      }
      if (now - lastStatus >= STATUS_EVERY_MS) {
        lastStatus = now;
        say(
          `finished ${latest?.topLevelDone ?? '?'}/${options.jobs} (active ${latest?.active ?? '?'}, enqueued ${fed}` +
            (options.invoke > 0 && latest ? `, invoked children ${latest.total - latest.topLevel}` : '') +
            ') · ' +
            `kills ${fleet.kills} · workers ready ${fleet.readyCount()}/${options.workers}`,
        );
      }
      await sleep(TICK_MS, abort);
    }

    say('stopping the workers (SIGTERM)');
    await fleet.stop(STOP_GRACE_MS);
    await enqueuer.close();
    enqueuer = null;

    say('checking the database');
    const [facts, figures] = [await jobFacts(url), await runFigures(url)];
    const { pgRestart, connectionKill } = faults;
    if (typeof pgRestart !== 'string') pgRestart.firstSuccessAt = await firstSuccessAfter(url, pgRestart.upAt);
    if (typeof connectionKill !== 'string') {
      connectionKill.firstSuccessAt = await firstSuccessAfter(url, connectionKill.at);
    }
    const parents = parent.slice(0, fed).filter(Boolean).length;
    const checks = evaluate(facts, options.jobs, figures.orphanSideEffects, options.invoke > 0 ? parents : undefined);
    const record: RunRecord = {
      options,
      setupMs,
      workersStartedAt: new Date(workersStart),
      chaosStartedAt: new Date(chaosStart),
      chaosEndedAt: new Date(chaosEnd!),
      allDoneAt: allDone === null ? null : new Date(allDone),
      enqueued: fed,
      parents,
      enqueueErrors,
      kills: fleet.kills,
      workerStarts: fleet.starts,
      unexpectedExits: fleet.unexpected,
      pgRestart,
      connectionKill,
      logPath: log.path,
    };
    const report = formatReport(record, figures, checks);
    process.stdout.write(`${report}\n`);
    log.write('report', report);
    return passed(checks, record) ? 0 : 1;
  } finally {
    abort.removeEventListener('abort', onAbort);
    fleet?.killAllNow();
    await enqueuer?.close().catch(() => undefined);
    // On every way out (checks done, the run broken, Ctrl-C), and before the server it pools for.
    await pooler?.stop(poolerLog).catch(() => undefined);
    await server?.stop().catch(() => undefined);
    await log.close();
  }
}

let options: ChaosOptions | null;
try {
  options = parseOptions(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  process.stderr.write(`${error.message}\n\n${USAGE}\n`);
  process.exit(2);
}
if (!options) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

const controller = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    process.stderr.write(
      `\n[chaos] ${signal}: stopping workers${options!.pooler ? ', PgBouncer' : ''} and PostgreSQL\n`,
    );
    controller.abort();
  });
}
try {
  process.exitCode = await run(options, controller.signal);
} catch (error) {
  if (error instanceof Interrupted) {
    process.stderr.write('[chaos] interrupted; no report\n');
    process.exitCode = 130;
  } else {
    process.stderr.write(`[chaos] the run broke: ${(error as Error).stack ?? String(error)}\nCHAOS FAILED\n`);
    process.exitCode = 1;
  }
}
