// Not part of the bench's table: where a limited queue's slots lose their time. The `limit10ms`
// drain (a queue limited to 10, handlers of 10 ms) on worker processes like the bench's, and per
// run: the handlers' own time, the mean number running, and the gap from each handler's end to the
// next start anywhere, which is what a turn of a slot costs beyond the handler. Ends and starts are
// paired in time order over all processes, so a slot that moves to another process is still one turn.
//
//   node bench/src/limit-turns.mjs [lib=ours-sync] [processes=2] [concurrency=10] [runs=3] [jobs=4000]
import { load } from './adapters/index.mjs';
import { drain, exactlyOnce, startWorkers } from './children.mjs';
import { checkpoint, ensureDatabase, percentile } from './common.mjs';

const [lib = 'ours-sync', processes = '2', concurrency = '10', runs = '3', size = '4000'] = process.argv.slice(2);
const jobs = Number(size);
const HANDLER_MS = 10;

const fmt = (v) => v.toFixed(2);

/** Each handler end paired with the first start after it, over every process: the turns' gaps in ms. */
function turnGaps(spans) {
  const starts = spans.map((s) => s[0]).sort((a, b) => a - b);
  const ends = spans.map((s) => s[1]).sort((a, b) => a - b);
  const gaps = [];
  let j = 0;
  for (const end of ends) {
    while (j < starts.length && starts[j] < end) j++;
    if (j === starts.length) break;
    gaps.push((starts[j] - end) / 1e6);
    j++;
  }
  return gaps.sort((a, b) => a - b);
}

/** The mean number of handlers running between the first start and the last end. */
function meanRunning(spans) {
  const events = spans
    .flatMap(([s, e]) => [
      [s, 1],
      [e, -1],
    ])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let running = 0;
  let area = 0;
  let last = events[0][0];
  for (const [t, d] of events) {
    area += running * (t - last);
    running += d;
    last = t;
  }
  return area / (events[events.length - 1][0] - events[0][0]);
}

await ensureDatabase();
const adapter = (await load(lib)).create();
if (!adapter.flow?.includes('limit')) throw new Error(`${lib} has no queue-wide limit in the bench`);
console.log(
  `${lib}: ${jobs} jobs of ${HANDLER_MS} ms, a queue limited to 10, ${processes} process(es) × ${concurrency}`,
);
for (let run = 1; run <= Number(runs); run++) {
  await checkpoint();
  await adapter.reset();
  await adapter.open();
  try {
    await adapter.enqueueFlow(jobs, 'limit', 1);
    await adapter.analyze();
    await checkpoint();
    const children = await startWorkers({
      lib,
      count: Number(processes),
      concurrency: Number(concurrency),
      size: jobs,
      handlerMs: HANDLER_MS,
      flow: 'limit',
    });
    const { seconds, results } = await drain({ adapter, children, total: jobs, timeoutMs: 120_000 });
    if (!exactlyOnce(results, jobs).ok) throw new Error('a job ran twice or not at all');
    const spans = [];
    for (const r of results) for (let i = 0; i < jobs; i++) if (r.starts[i]) spans.push([r.starts[i], r.ends[i]]);
    const handler = spans.map(([s, e]) => (e - s) / 1e6).sort((a, b) => a - b);
    const gaps = turnGaps(spans);
    const utilisation = ((jobs / seconds) * HANDLER_MS) / 1000 / 10;
    console.log(
      `run ${run}: ${fmt(seconds)} s, utilisation ${fmt(utilisation)}, mean running ${fmt(meanRunning(spans))}; ` +
        `handler ms p50 ${fmt(percentile(handler, 0.5))} p90 ${fmt(percentile(handler, 0.9))}; ` +
        `turn gap ms p10 ${fmt(percentile(gaps, 0.1))} p50 ${fmt(percentile(gaps, 0.5))} p90 ${fmt(percentile(gaps, 0.9))} ` +
        `p99 ${fmt(percentile(gaps, 0.99))}; jobs per process ${results.map((r) => r.done).join('/')}`,
    );
  } finally {
    await adapter.cleanup();
  }
}
await adapter.close();
