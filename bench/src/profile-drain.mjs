// Not part of the bench: drains N jobs in this process (producer and worker in
// one), for profiling the worker with --cpu-prof or --heap-prof.
// Usage: node bench/src/profile-drain.mjs [lib] [concurrency] [n]
import { load } from './adapters/index.mjs';
import fs from 'node:fs';
import { checkpoint } from './common.mjs';

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

const [lib = 'ours', conc = '10', size = '20000'] = process.argv.slice(2);
const n = Number(size);
const mod = await load(lib);
const producer = mod.create();
await producer.open?.();
await producer.reset();
await producer.enqueueBulk(n);
await producer.analyze?.();
await checkpoint();
const worker = mod.create();
const pg0 = pgCpuMs();
const cpu0 = process.cpuUsage();
let done = 0;
let t0 = 0;
let finish;
const finished = new Promise((r) => (finish = r));
await worker.startWorker({
  concurrency: Number(conc),
  onJob() {
    if (done++ === 0) t0 = performance.now();
    if (done === n) finish();
  },
});
await finished;
while ((await producer.pendingCount()) > 0) await new Promise((r) => setTimeout(r, 2));
const secs = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
const pgMs = pgCpuMs() - pg0;
console.log(`${lib}: ${Math.round(n / secs)} jobs/s, rss ${Math.round(process.resourceUsage().maxRSS / 1024)} MB, node ${((cpu.user + cpu.system) / n).toFixed(1)} us/job, postgres ${((pgMs * 1000) / n).toFixed(1)} us/job`);
await worker.close();
await producer.cleanup();
