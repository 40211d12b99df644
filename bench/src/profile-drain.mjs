// Not part of the bench: a drain for profiling a library's worker, with the
// worker's CPU per job (Node, and every postgres process on the machine) and
// its memory before and during the drain.
//
//   node bench/src/profile-drain.mjs [lib] [concurrency] [n]
//   PROFILE_GROUPS=100 node bench/src/profile-drain.mjs ours 10 40000   # the jobs over 100 groups
//
// The jobs are enqueued by a child process first, so this process holds the
// worker only, as a bench worker does. Run it with --cpu-prof or
// --heap-prof for a profile of the worker.
import { fork } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load } from './adapters/index.mjs';
import { checkpoint, sql } from './common.mjs';

const [lib = 'ours', conc = '10', size = '20000', role] = process.argv.slice(2);
const n = Number(size);
const mod = await load(lib);

if (role === 'fill') {
  const producer = mod.create();
  await producer.open?.();
  await producer.reset();
  // PROFILE_GROUPS=100: the jobs spread over that many groups of one queue, as the groups scenario.
  const groups = Number(process.env.PROFILE_GROUPS ?? 0);
  if (groups > 0) await producer.enqueueBulkWith(n, (i) => ({ queue: 'grouped', group: `tenant-${i % groups}` }));
  else await producer.enqueueBulk(n);
  await producer.analyze?.();
  await producer.close();
  process.exit(0);
}

// CPU ms of every postgres process on this machine (utime + stime), from /proc.
function pgCpuMs() {
  let ticks = 0;
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {}
  }
  return ticks * 10;
}

await new Promise((resolve, reject) =>
  fork(fileURLToPath(import.meta.url), [lib, conc, size, 'fill'], { execArgv: [] })
    .on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`fill exited ${code}`))))
    .on('error', reject),
);
await checkpoint();
// WAL written from here to the end of the drain (includes the worker's start-up, a few hundred bytes).
const lsn0 = (await sql('SELECT pg_current_wal_lsn() AS l')).rows[0].l;
// Transactions committed in the bench database, per job: how many statements the worker's batching costs.
const xacts = async () =>
  Number((await sql('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()')).rows[0].xact_commit);

const worker = mod.create();
const probe = mod.create();
const base = process.memoryUsage();
const peakMem = { rss: 0, heapTotal: 0, heapUsed: 0 };
const sampler = setInterval(() => {
  const u = process.memoryUsage();
  for (const k of Object.keys(peakMem)) peakMem[k] = Math.max(peakMem[k], u[k]);
}, 50);
// CPU is counted from the first job on, so the worker's start-up is not spread over the jobs.
let pg0 = 0;
let cpu0 = null;
let done = 0;
let t0 = 0;
let xact0 = 0;
let finish;
const finished = new Promise((r) => (finish = r));
await worker.startWorker({
  concurrency: Number(conc),
  onJob() {
    if (done++ === 0) {
      t0 = performance.now();
      cpu0 = process.cpuUsage();
      pg0 = pgCpuMs();
      void xacts().then((x) => (xact0 = x));
    }
    if (done === n) finish();
  },
});
await finished;
while ((await probe.pendingCount()) > 0) await new Promise((r) => setTimeout(r, 2));
const secs = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
const pgMs = pgCpuMs() - pg0;
// Stats are sent at transaction end with a delay; wait for them to settle.
await new Promise((r) => setTimeout(r, 1100));
const xactPerJob = ((await xacts()) - xact0) / n;
const walBytes = Number((await sql('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS d', [lsn0])).rows[0].d);
clearInterval(sampler);
// With --expose-gc: what the worker still holds once the drain is over (a leak shows here).
if (globalThis.gc) {
  globalThis.gc();
  console.log(`  after the drain and a full GC: heap used ${Math.round(process.memoryUsage().heapUsed / 1048576)} MB`);
}
const mb = (x) => Math.round(x / 1048576);
console.log(
  `${lib} c${conc}: ${Math.round(n / secs)} jobs/s, node ${((cpu.user + cpu.system) / n).toFixed(1)} us/job, ` +
    `postgres ${((pgMs * 1000) / n).toFixed(1)} us/job, WAL ${Math.round(walBytes / n)} B/job, ${(1 / xactPerJob).toFixed(0)} jobs/commit; memory before: rss ${mb(base.rss)} heap ${mb(base.heapUsed)}/${mb(base.heapTotal)}, ` +
    `peak rss ${mb(process.resourceUsage().maxRSS * 1024)}, heap ${mb(peakMem.heapUsed)}/${mb(peakMem.heapTotal)}`,
);
await worker.close();
if (process.env.SHOWHOT) {
  const { sql } = await import('./common.mjs');
  await new Promise((r) => setTimeout(r, 700));
  console.log((await sql(`SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'job'`)).rows);
}
await probe.cleanup();
