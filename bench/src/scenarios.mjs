// The measured scenarios. Each run gets freshly reset tables from the
// orchestrator and returns plain numbers; the orchestrator takes medians.
import { drain, exactlyOnce, mostRunning, startWorkers } from './children.mjs';
import { DATABASE_URL, checkpoint, ms, now, percentile, range, sleep } from './common.mjs';
import { pgbouncerVersion, startPgBouncer } from './pgbouncer.mjs';

// Pre-filled tables get the same treatment for every library before a
// measurement: fresh planner statistics and no dirty pages left to flush.
async function settle(adapter) {
  await adapter.analyze();
  await checkpoint();
}

// The PgBouncer scenarios' pooler: one PgBouncer in transaction mode with its defaults, in front of
// the bench's server, started before the scenario's first run and stopped after its last (the
// orchestrator calls `check`, `setup` and `teardown`). Only the workers connect through it: the
// pre-fill, the pending counts and resets stay direct. Libraries that give no pooler options run
// there as they are; BullMQ (Redis) has no PostgreSQL pooler in its path: n/a.
function viaPgBouncer() {
  let bouncer = null;
  return {
    supports: (adapter) => adapter.storage !== 'postgres' || Boolean(adapter.pooler),
    notApplicable: (adapter) => adapter.storage !== 'postgres',
    check: () => pgbouncerVersion(),
    async setup() {
      bouncer = await startPgBouncer({ mode: 'transaction', upstream: DATABASE_URL });
      return { pgbouncer: bouncer.version };
    },
    async teardown() {
      await bouncer?.stop();
      bouncer = null;
    },
    // What the workers get: the pooler's URL, and whether a library that can LISTEN on a direct
    // connection beside it does (ours: directConnection).
    pooled: (listen) => ({ url: bouncer.url, listen }),
  };
}

// `handlerMs`: each handler waits that long; `flow`: the flow-control kind the workers consume
// (an adapter's startWorker option); `keys`: job i's serial key or group is i % keys; `pooled`: the
// workers connect through a transaction pooler (viaPgBouncer); `pending`: what counts as unfinished
// (jobs parked an hour ahead are not), the adapter's pendingCount by default.
async function timedDrain(
  adapter,
  lib,
  { jobs, concurrency, processes = 1, handlerMs = 0, flow, keys = 1, pooled, pending },
) {
  const children = await startWorkers({ lib, count: processes, concurrency, size: jobs, handlerMs, flow, pooled });
  const { seconds, results } = await drain({
    adapter: pending ? { pendingCount: pending } : adapter,
    children,
    total: jobs,
    timeoutMs: 60_000 + jobs * (10 + handlerMs), // generous: a floor of ~100 jobs/s before we call it stuck
  });
  const once = exactlyOnce(results, jobs);
  const running = mostRunning(results, jobs, keys);
  return {
    jobsPerSec: jobs / seconds,
    seconds,
    mostRunning: running.most,
    mostPerKey: running.mostPerKey,
    maxShare: Math.max(...results.map((r) => r.done)) / jobs,
    rssMb: Math.max(...results.map((r) => r.maxRssKb)) / 1024,
    exactlyOnce: once,
    perProcess: results.map((r) => r.done),
  };
}

// Polls `probe` until it returns true; a worker's failure or the deadline ends the wait with an error.
async function until(what, probe, { children = [], timeoutMs = 10_000, everyMs = 5 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const failed = children.find((c) => c.failure);
    if (failed) throw failed.failure;
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`${what} after ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

// The latency figures of one scenario, in ms.
/**
 * Calls `send(i)` for i in 0..count-1, each 20 ms after the start of the one before (on schedule,
 * not 20 ms after it returned), one at a time; the monotonic time each call began, by i.
 */
async function paced(count, send) {
  const sent = new Array(count);
  const base = Date.now();
  for (const i of range(count)) {
    const wait = base + i * 20 - Date.now();
    if (wait > 0) await sleep(wait);
    sent[i] = now();
    await send(i);
  }
  return sent;
}

function percentiles(lat) {
  lat.sort((a, b) => a - b);
  return { p50: percentile(lat, 0.5), p95: percentile(lat, 0.95), p99: percentile(lat, 0.99) };
}

export function buildScenarios(scale) {
  const S = (n, min = 1) => Math.max(min, Math.round(n * scale));
  const bulkN = S(20_000);
  const singleN = S(2_000);
  const drainN = S(20_000);
  // The plain drains are the throughput figures: 20k jobs drained in well under a second on a fast
  // machine, where start-up and the first claim weigh as much as the steady state.
  const plainDrainN = S(100_000);
  const latencyN = S(200, 20);
  const claimN = S(2_000);
  const keptN = S(1_000_000);
  const batchN = S(10_000);
  const flowMsN = S(4_000);
  // graphile-worker's named queues turn about once per poll (52 jobs/s here): 20k of them would
  // take six minutes a run and pass the drain's time limit, so the no-op serial drain is smaller.
  const serialN = S(2_000);
  // The jobs parked in a signal wait beside the plain drain (drain10-waiting).
  const parkedN = S(10_000);
  // The parents of the invoke drain, each invoking one child: 2 × invokeN job executions (plus the
  // parents' replays), set against a plain drain of as many.
  const invokeN = S(2_000);
  const k = (n) => (n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n));
  const kept = keptN >= 1_000_000 && keptN % 1_000_000 === 0 ? `${keptN / 1_000_000}M` : k(keptN);

  const drainScenario = (id, concurrency, processes) => ({
    id,
    plainDrain: true,
    title:
      processes === 1
        ? `drain ${k(plainDrainN)}, 1 process, concurrency ${concurrency} (jobs/s)`
        : `drain ${k(plainDrainN)}, ${processes} processes × ${concurrency} (jobs/s)`,
    async run(adapter, lib) {
      await adapter.enqueueBulk(plainDrainN);
      await settle(adapter);
      return timedDrain(adapter, lib, { jobs: plainDrainN, concurrency, processes });
    },
  });

  // The same drain with the worker connected through PgBouncer in transaction mode.
  const pooledDrainScenario = (id, concurrency) => {
    const { pooled, ...pooler } = viaPgBouncer();
    return {
      id,
      title: `drain ${k(plainDrainN)} through PgBouncer (transaction mode), 1 process, concurrency ${concurrency} (jobs/s)`,
      ...pooler,
      async run(adapter, lib) {
        await adapter.enqueueBulk(plainDrainN);
        await settle(adapter);
        return timedDrain(adapter, lib, { jobs: plainDrainN, concurrency, pooled: pooled(true) });
      },
    };
  };

  // Enqueue call → handler start on an idle worker (concurrency 10), `latencyN` jobs 20 ms apart.
  // `pooled` (a function of nothing): the worker connects through a transaction pooler.
  const latencyScenario = (id, title, pooled) => ({
    id,
    title: `${title}, idle worker, ${latencyN} jobs 20 ms apart (ms)`,
    async run(adapter, lib) {
      const [child] = await startWorkers({ lib, concurrency: 10, size: latencyN, mode: 'latency', pooled: pooled?.() });
      try {
        // One job first so connections and prepared statements on both
        // sides are warm, then let the worker go idle before measuring.
        await adapter.enqueueOne(-1);
        const deadline = Date.now() + 10_000;
        while (!child.starts.some((s) => s.i === -1)) {
          if (child.failure) throw child.failure;
          if (Date.now() > deadline) throw new Error('warm-up job never started');
          await sleep(5);
        }
        await sleep(1000);
        child.starts.length = 0;

        const sent = await paced(latencyN, (i) => adapter.enqueueOne(i));
        const until = Date.now() + 10_000;
        while (new Set(child.starts.map((s) => s.i)).size < latencyN) {
          if (child.failure) throw child.failure;
          if (Date.now() > until) throw new Error(`only ${child.starts.length}/${latencyN} jobs started`);
          await sleep(5);
        }
        const lat = child.starts.filter((s) => s.i >= 0).map((s) => ms(sent[s.i], s.t));
        lat.sort((a, b) => a - b);
        await child.stop();
        return { p50: percentile(lat, 0.5), p95: percentile(lat, 0.95), p99: percentile(lat, 0.99) };
      } finally {
        child.kill();
      }
    },
  });

  // Latency through PgBouncer: ours LISTENs on directConnection (`listen`), or, in the polling
  // variant, has none and polls as the PostgreSQL peers do there; that variant runs ours alone (the
  // peers run the same way in both) and is set against the peers' figures of the first.
  const pooledLatencyScenario = (id, title, listen) => {
    const { pooled, ...pooler } = viaPgBouncer();
    const scenario = { ...latencyScenario(id, title, () => pooled(listen)), ...pooler };
    if (listen) return scenario;
    return { ...scenario, supports: (adapter) => adapter.pooler?.listenOptional === true, notApplicable: undefined };
  };

  // Durable execution (ours; a peer without the feature shows n/a). signal: `latencyN` jobs each
  // wait for a signal, run once and park (checked in the job table: queued, flagged with the
  // signal's name, due in an hour); then one signal each, 20 ms apart, timed from just before
  // signal() to the resumed handler's code after waitForSignal() returned, on an idle worker
  // (concurrency 10). One more job is parked and signalled first, as the warm-up.
  const signalScenario = {
    id: 'signal',
    title: `signal round trip: signal() → the waiting job resumes, idle worker, ${latencyN} parked jobs signalled 20 ms apart (ms)`,
    notApplicable: (adapter) => adapter.signals !== true,
    async run(adapter, lib) {
      const n = latencyN + 1; // job latencyN: the warm-up
      const ids = await adapter.enqueueSignalWaiters(n);
      const [child] = await startWorkers({ lib, concurrency: 10, size: n, mode: 'latency' });
      try {
        const t = now();
        await until(`fewer than ${n} jobs parked`, async () => (await adapter.parkedCount()) === n, {
          children: [child],
          timeoutMs: 60_000,
          everyMs: 50,
        });
        const parkSeconds = ms(t, now()) / 1000;
        if (child.starts.length) throw new Error(`${child.starts.length} jobs resumed before any signal`);
        await adapter.signal(ids[latencyN], latencyN);
        await until('the warm-up job never resumed', () => child.starts.some((s) => s.i === latencyN), {
          children: [child],
        });
        await sleep(1000);
        child.starts.length = 0;

        const sent = await paced(latencyN, (i) => adapter.signal(ids[i], i));
        await until(`not every signalled job resumed`, () => new Set(child.starts.map((s) => s.i)).size >= latencyN, {
          children: [child],
        });
        const lat = child.starts.filter((s) => s.i >= 0 && s.i < latencyN).map((s) => ms(sent[s.i], s.t));
        // Every job ended: none resumed and then lost, none left parked.
        await until('jobs still unfinished', async () => (await adapter.pendingCount()) === 0, { children: [child] });
        const result = await child.stop();
        const signals = await adapter.signalCounts();
        if (signals.sent !== n || signals.consumed !== n) {
          throw new Error(`signals: ${signals.sent} stored, ${signals.consumed} consumed, ${n} expected`);
        }
        return { ...percentiles(lat), parkSeconds, exactlyOnce: exactlyOnce([result], n) };
      } finally {
        child.kill();
      }
    },
  };

  // waitFor: one job at a time, 20 ms apart, each awaited by one waiter in this process (ours:
  // JobQueue.waitFor; BullMQ: job.waitUntilFinished on the process's one QueueEvents), called
  // right after the enqueue. The handler waits 50 ms, so the wait has begun before the job ends,
  // and records its end just before it returns; timed from there to the waiter's resolution.
  const HOLD_MS = 50;
  const waitForScenario = {
    id: 'waitfor',
    title: `waitFor: job ends → waiter resolves, idle worker, ${latencyN} jobs of ${HOLD_MS} ms 20 ms apart, one waiter each (ms)`,
    notApplicable: (adapter) => adapter.endWaits !== true,
    async run(adapter, lib) {
      const n = latencyN + 1; // job latencyN: the warm-up
      const [child] = await startWorkers({ lib, concurrency: 10, size: n, mode: 'latency' });
      try {
        const warm = await adapter.enqueueHeld(latencyN, HOLD_MS);
        if (!(await adapter.waitForEnd(warm, 10_000))) throw new Error('the warm-up job did not succeed');
        await sleep(1000);
        child.starts.length = 0;

        const resolved = new Array(latencyN);
        const waits = [];
        const base = Date.now();
        for (const i of range(latencyN)) {
          const wait = base + i * 20 - Date.now();
          if (wait > 0) await sleep(wait);
          const job = await adapter.enqueueHeld(i, HOLD_MS);
          waits.push(
            adapter.waitForEnd(job, 30_000).then((ok) => {
              if (resolved[i]) throw new Error(`job ${i}: its waiter resolved twice`);
              resolved[i] = now();
              if (!ok) throw new Error(`job ${i} ended, but did not succeed`);
            }),
          );
        }
        await Promise.all(waits);
        // The handlers' end times travel over IPC: let the last ones arrive.
        await until(
          `not every job's end reached the orchestrator`,
          () => new Set(child.starts.map((s) => s.i)).size >= latencyN,
          {
            children: [child],
          },
        );
        const ended = new Array(latencyN);
        for (const s of child.starts) if (s.i >= 0 && s.i < latencyN) ended[s.i] = s.t;
        const lat = range(latencyN).map((i) => ms(ended[i], resolved[i]));
        if (lat.some((x) => !(x >= 0))) throw new Error('a waiter resolved before its job ended');
        await until('jobs still unfinished', async () => (await adapter.pendingCount()) === 0, { children: [child] });
        const result = await child.stop();
        return { ...percentiles(lat), exactlyOnce: exactlyOnce([result], n) };
      } finally {
        child.kill();
      }
    },
  };

  // The plain drain at 1 × 10 with `parkedN` jobs parked in a signal wait in the same queue and
  // table: they ran once (a worker of its own, stopped before the drain) and wait, queued, due
  // in an hour. Reported beside drain10, measured right after it, as a ratio. Checked: every
  // drained job ran exactly once, and the parked jobs are all still parked after the drain.
  const waitingDrainScenario = {
    id: 'drain10-waiting',
    title: `drain ${k(plainDrainN)} beside ${k(parkedN)} jobs parked in a signal wait, 1 process, concurrency 10 (jobs/s)`,
    notApplicable: (adapter) => adapter.signals !== true,
    async run(adapter, lib) {
      // Indexes past the drain's: a parked job that ran the hook would be counted outside.
      await adapter.enqueueSignalWaiters(parkedN, plainDrainN);
      const t = now();
      const [parker] = await startWorkers({ lib, concurrency: 10, size: 0 });
      try {
        await until(`fewer than ${parkedN} jobs parked`, async () => (await adapter.parkedCount()) === parkedN, {
          children: [parker],
          timeoutMs: 120_000,
          everyMs: 100,
        });
        await parker.stop();
      } finally {
        parker.kill();
      }
      const parkSeconds = ms(t, now()) / 1000;
      await adapter.enqueueBulk(plainDrainN);
      await settle(adapter);
      const m = await timedDrain(adapter, lib, {
        jobs: plainDrainN,
        concurrency: 10,
        pending: () => adapter.pendingDueCount(),
      });
      const still = await adapter.parkedCount();
      if (still !== parkedN) throw new Error(`${still} of ${parkedN} jobs still parked after the drain`);
      return { ...m, parkSeconds };
    },
  };

  // ctx.invoke (ours; a peer without child jobs shows n/a). `invokeN` parents, each invoking one no-op
  // child, drained by one process at concurrency 10, reported as parents/s; in the same run, with a
  // reset between (the order alternating run by run), the same worker drains 2 × invokeN plain no-op
  // jobs, as many executions minus the parents' replays, and the run's ratio of the two drain times
  // is the cost of the invoke machinery. The drain's clock starts at the first parent's first attempt.
  // Checked: each parent's code after invoke() ran once with its own child's result and each child
  // ran once (the workers' counts over 2 × invokeN indexes), and in the job table every parent
  // succeeded with that result, with exactly one child row (invoked_by) that succeeded in its first
  // attempt, and no other child row.
  let invokeRuns = 0;
  const invokeScenario = {
    id: 'invoke',
    title: `ctx.invoke: drain ${k(invokeN)} parents that each invoke one no-op child, 1 process, concurrency 10 (parents/s)`,
    notApplicable: (adapter) => adapter.invokes !== true,
    async run(adapter, lib) {
      const jobs = 2 * invokeN;
      const phases = invokeRuns++ % 2 === 0 ? ['invoke', 'plain'] : ['plain', 'invoke'];
      const out = {};
      for (const [p, phase] of phases.entries()) {
        if (p > 0) {
          await checkpoint();
          await adapter.reset();
          await adapter.open();
        }
        if (phase === 'invoke') {
          // Children take the indexes past the parents'.
          await adapter.enqueueInvokers(invokeN, invokeN);
          await settle(adapter);
          const m = await timedDrain(adapter, lib, { jobs, concurrency: 10 });
          const { timeline } = await adapter.checkInvoked(invokeN);
          Object.assign(out, {
            timeline,
            parentsPerSec: invokeN / m.seconds,
            seconds: m.seconds,
            rssMb: m.rssMb,
            invokeExactlyOnce: m.exactlyOnce,
          });
        } else {
          await adapter.enqueueBulk(jobs);
          await settle(adapter);
          const m = await timedDrain(adapter, lib, { jobs, concurrency: 10 });
          Object.assign(out, { plainJobsPerSec: m.jobsPerSec, plainSeconds: m.seconds, plainExactlyOnce: m.exactlyOnce });
        }
      }
      // One check for the run: both drains' counts.
      const [a, b] = [out.invokeExactlyOnce, out.plainExactlyOnce];
      const exactly = {
        ok: a.ok && b.ok,
        missing: a.missing + b.missing,
        duplicated: a.duplicated + b.duplicated,
        outside: a.outside + b.outside,
      };
      return { ...out, exactlyOnce: exactly, plainOverInvoke: out.plainSeconds / out.seconds };
    },
  };

  // ctx.invoke's round trip on an idle worker (concurrency 10): `latencyN` parents enqueued one by one
  // 20 ms apart, each invoking one no-op child; timed from just before the parent's enqueue to its
  // code after invoke() returned (the replayed attempt, just before it returns), and, of that, to the
  // child's handler start. One more parent runs first as the warm-up. Checked as in `invoke`.
  const invokeLatencyScenario = {
    id: 'invoke-latency',
    title: `ctx.invoke round trip: parent enqueued → its code after invoke() returned, idle worker, ${latencyN} parents 20 ms apart (ms)`,
    notApplicable: (adapter) => adapter.invokes !== true,
    async run(adapter, lib) {
      const n = latencyN + 1; // parent latencyN: the warm-up; parent i's child is n + i
      const [child] = await startWorkers({ lib, concurrency: 10, size: 2 * n, mode: 'latency' });
      try {
        await adapter.enqueueInvoker(latencyN, n + latencyN);
        await until('the warm-up parent never resumed', () => child.starts.some((s) => s.i === latencyN), {
          children: [child],
        });
        await sleep(1000);
        child.starts.length = 0;

        const sent = await paced(latencyN, (i) => adapter.enqueueInvoker(i, n + i));
        await until(
          'not every parent resumed',
          () => child.starts.filter((s) => s.i >= 0 && s.i < latencyN).length >= latencyN,
          { children: [child] },
        );
        const lat = child.starts.filter((s) => s.i >= 0 && s.i < latencyN).map((s) => ms(sent[s.i], s.t));
        const toChild = child.starts
          .filter((s) => s.i >= n && s.i < n + latencyN)
          .map((s) => ms(sent[s.i - n], s.t))
          .sort((a, b) => a - b);
        await until('jobs still unfinished', async () => (await adapter.pendingCount()) === 0, { children: [child] });
        const result = await child.stop();
        await adapter.checkInvoked(n);
        return {
          ...percentiles(lat),
          childP50: percentile(toChild, 0.5),
          exactlyOnce: exactlyOnce([result], 2 * n),
        };
      } finally {
        child.kill();
      }
    },
  };

  // Flow control, on every library whose adapter lists the kind in `flow`: two processes × 10,
  // each run checked for the most handlers running at once (all jobs, and per key). `slots`: the
  // slots 10 ms handlers could keep busy (10 for the limit, 20 for serial keys and groups), for
  // the utilisation jobs/s × handler seconds ÷ slots.
  const flowScenario = (id, what, { jobs, flow, keys = 1, handlerMs = 0, slots }) => ({
    id,
    title: `flow control: ${what}, 2 processes × 10 (jobs/s)`,
    supports: (adapter) => adapter.flow?.includes(flow) === true,
    async run(adapter, lib) {
      await adapter.enqueueFlow(jobs, flow, keys);
      await settle(adapter);
      const m = await timedDrain(adapter, lib, { jobs, concurrency: 10, processes: 2, handlerMs, flow, keys });
      return slots ? { ...m, utilisation: (m.jobsPerSec * handlerMs) / 1000 / slots } : m;
    },
  });

  const claimScenario = (id, finished) => ({
    id,
    title: `claim: drain ${k(claimN)} with ${finished ? kept : 0} finished jobs kept (jobs/s)`,
    async run(adapter, lib) {
      let prefillSeconds = 0;
      if (finished) {
        const t = now();
        await adapter.prefillFinished(keptN);
        prefillSeconds = ms(t, now()) / 1000;
      }
      await adapter.enqueueBulk(claimN);
      await settle(adapter);
      return { ...(await timedDrain(adapter, lib, { jobs: claimN, concurrency: 10 })), prefillSeconds };
    },
  });

  return [
    {
      id: 'bulk',
      title: `bulk enqueue ${k(bulkN)}, one call (jobs/s)`,
      async run(adapter) {
        const t = now();
        await adapter.enqueueBulk(bulkN);
        return { jobsPerSec: bulkN / (ms(t, now()) / 1000) };
      },
    },
    {
      id: 'single',
      title: `single enqueue ${k(singleN)}, one at a time (jobs/s)`,
      async run(adapter) {
        const t = now();
        for (let i = 0; i < singleN; i++) await adapter.enqueueOne(i);
        return { jobsPerSec: singleN / (ms(t, now()) / 1000) };
      },
    },
    drainScenario('drain10', 10, 1),
    // Beside drain10, the figure it is reported against, and measured right after it.
    pooledDrainScenario('drain10-pgbouncer', 10),
    // Beside drain10 too: the same drain with jobs parked in a signal wait.
    waitingDrainScenario,
    drainScenario('drain50', 50, 1),
    drainScenario('drain2x10', 10, 2),
    drainScenario('drain4x5', 5, 4),
    // Flow control: each beside the figure it must not fall far below, and
    // measured right after it, before the scenarios that write millions of rows (claim1m) leave
    // PostgreSQL busy with their aftermath.
    flowScenario('limit', `drain ${k(drainN)} in a queue limited to 10`, { jobs: drainN, flow: 'limit' }),
    flowScenario('limit10ms', `drain ${k(flowMsN)} jobs of 10 ms in a queue limited to 10`, {
      jobs: flowMsN,
      flow: 'limit',
      handlerMs: 10,
      slots: 10,
    }),
    flowScenario('serial', `drain ${k(serialN)} over 100 serial keys`, { jobs: serialN, flow: 'serial', keys: 100 }),
    flowScenario('serial10ms', `drain ${k(flowMsN)} jobs of 10 ms over 100 serial keys`, {
      jobs: flowMsN,
      flow: 'serial',
      keys: 100,
      handlerMs: 10,
      slots: 20,
    }),
    flowScenario('groups', `drain ${k(drainN)} over 100 groups`, { jobs: drainN, flow: 'groups', keys: 100 }),
    flowScenario('groups10ms', `drain ${k(flowMsN)} jobs of 10 ms over 100 groups`, {
      jobs: flowMsN,
      flow: 'groups',
      keys: 100,
      handlerMs: 10,
      slots: 20,
    }),
    {
      id: 'unique',
      title: `flow control: enqueue ${k(bulkN)} with unique keys, half of them duplicates, one call (calls/s)`,
      supports: (adapter) => adapter.flowControl === true,
      async run(adapter) {
        const t = now();
        const created = await adapter.enqueueBulkWith(bulkN, (i) => ({ unique: { key: `k-${i % (bulkN / 2)}` } }));
        if (created !== bulkN / 2) throw new Error(`unique: ${created} jobs created, ${bulkN / 2} expected`);
        return { jobsPerSec: bulkN / (ms(t, now()) / 1000) };
      },
    },
    // Every peer has unique enqueue of one job (graphile-worker's jobKey, pg-boss's singletonKey,
    // BullMQ's deduplication): each key twice, the second a duplicate, reported beside `single`.
    {
      id: 'uniqueone',
      title: `single enqueue ${k(singleN)} with unique keys, each key twice, one at a time (calls/s)`,
      supports: (adapter) => typeof adapter.enqueueUnique === 'function',
      async run(adapter) {
        const keys = Math.ceil(singleN / 2);
        const t = now();
        for (let i = 0; i < singleN; i++) await adapter.enqueueUnique(i, `k-${i % keys}`);
        const seconds = ms(t, now()) / 1000;
        const created = await adapter.jobCount();
        if (created !== keys) throw new Error(`uniqueone: ${created} jobs exist, ${keys} expected`);
        return { jobsPerSec: singleN / seconds };
      },
    },
    // Durable steps and ctx.transaction (this library only), beside drain10, the plain drain they
    // are reported against: every step is a write and a commit of its own.
    {
      id: 'steps3',
      title: `durable steps: drain ${k(drainN)} jobs of 3 steps each, 1 process, concurrency 10 (jobs/s)`,
      supports: (adapter) => adapter.durableSteps === true,
      async run(adapter, lib) {
        await adapter.enqueueBulkPayload(drainN, { steps: 3 });
        await settle(adapter);
        return timedDrain(adapter, lib, { jobs: drainN, concurrency: 10 });
      },
    },
    {
      id: 'txdrain',
      title: `ctx.transaction: drain ${k(drainN)} jobs that each end in one, 1 process, concurrency 10 (jobs/s)`,
      supports: (adapter) => adapter.durableSteps === true,
      async run(adapter, lib) {
        await adapter.enqueueBulkPayload(drainN, { tx: true });
        await settle(adapter);
        return timedDrain(adapter, lib, { jobs: drainN, concurrency: 10 });
      },
    },
    // Encryption at rest (this library only), each beside the plain figure it is reported against:
    // every payload sealed at enqueue, opened at claim, and the job's outcome sealed too.
    {
      id: 'encbulk',
      title: `encrypted: bulk enqueue ${k(bulkN)}, one call (jobs/s)`,
      supports: (adapter) => adapter.encryption === true,
      async run(adapter) {
        const t = now();
        await adapter.enqueueBulkEncrypted(bulkN);
        return { jobsPerSec: bulkN / (ms(t, now()) / 1000) };
      },
    },
    {
      id: 'encdrain',
      title: `encrypted: drain ${k(drainN)}, 1 process, concurrency 10 (jobs/s)`,
      supports: (adapter) => adapter.encryption === true,
      async run(adapter, lib) {
        await adapter.enqueueBulkEncrypted(drainN);
        await settle(adapter);
        return timedDrain(adapter, lib, { jobs: drainN, concurrency: 10 });
      },
    },
    latencyScenario('latency', 'enqueue→start latency'),
    pooledLatencyScenario('latency-pgbouncer', 'enqueue→start latency through PgBouncer (transaction mode)', true),
    pooledLatencyScenario(
      'latency-pgbouncer-poll',
      'enqueue→start latency through PgBouncer (transaction mode), ours polling (no directConnection)',
      false,
    ),
    signalScenario,
    waitForScenario,
    invokeScenario,
    invokeLatencyScenario,
    claimScenario('claim0', false),
    claimScenario('claim1m', true),
    {
      // Workflows must not make completions serial: one batch's counters are
      // updated by every member's completion.
      id: 'batch10k',
      title: `one batch of ${k(batchN)} jobs (members + then), concurrency 10`,
      supports: (adapter) => typeof adapter.enqueueBatch === 'function',
      async run(adapter, lib) {
        const t = now();
        await adapter.enqueueBatch(batchN);
        const dispatchSeconds = ms(t, now()) / 1000;
        await settle(adapter);
        return { ...(await timedDrain(adapter, lib, { jobs: batchN, concurrency: 10 })), dispatchSeconds };
      },
    },
  ];
}
