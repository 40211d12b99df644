// A worker process: runs one library's worker with a no-op handler and tells
// the orchestrator (over IPC) when jobs start, how many ran, and its peak RSS.
//
// argv: <library> <concurrency> <size> <mode: drain|latency> [<handler ms> [<flow: limit|serial|groups> [<pooled>]]]
// <pooled>: JSON { url, listen } when the worker connects through a transaction pooler (PgBouncer);
// `listen` false keeps a library that could LISTEN on a direct connection from doing so.
import { load } from './adapters/index.mjs';
import { now, sleep } from './common.mjs';

const [lib, concArg, sizeArg, mode, sleepArg = '0', flowArg = '', pooledArg = ''] = process.argv.slice(2);
const concurrency = Number(concArg);
const size = Number(sizeArg);
const handlerMs = Number(sleepArg); // > 0: each handler waits that long, as a job doing I/O would
const flow = flowArg || undefined;
const pooled = pooledArg ? JSON.parse(pooledArg) : undefined;

// Each job's first start and end (CLOCK_MONOTONIC ns, one clock for every process), so the
// orchestrator can count how many ran at once from the handlers' own times.
const starts = new Float64Array(size);
const ends = new Float64Array(size);

const send = (msg) => process.connected && process.send(msg);

// Each job id's run count, so the orchestrator can check exactly-once across processes.
const counts = new Uint16Array(size);
let done = 0;
let outside = 0; // payloads outside [0, size): warm-up jobs, or a bug worth seeing
let first = null;
let reported = 0;

function onJob(payload) {
  const t = now();
  if (first === null) {
    first = t;
    send({ type: 'first', t });
  }
  // An attempt's start that is not counted (a parent's attempts in the invoke scenarios): it only
  // starts the drain's clock.
  if (payload?.mark === true) return;
  const i = payload?.i;
  const timed = Number.isInteger(i) && i >= 0 && i < size && starts[i] === 0;
  if (timed) starts[i] = Number(t);
  if (handlerMs > 0) {
    return sleep(handlerMs).then(() => {
      if (timed) ends[i] = Number(now());
      finish(payload, t);
    });
  }
  if (timed) ends[i] = Number(now());
  finish(payload, t);
}

// Counted once the handler is done, so a drain ends only when every handler has returned.
function finish(payload, t) {
  const i = payload?.i;
  if (Number.isInteger(i) && i >= 0 && i < size) {
    counts[i]++;
    done++;
  } else {
    outside++;
  }
  if (mode === 'latency') send({ type: 'start', i, t });
  else if (done === size) report(); // the single-process case needs no timer tick
}

function report() {
  if (done !== reported) {
    reported = done;
    send({ type: 'progress', done });
  }
}

// Load the library before the orchestrator says go, so that two worker
// processes start consuming at the same moment rather than as their imports finish.
const mod = await load(lib);
const adapter = mod.create();
send({ type: 'loaded' });

let ticker = null;

process.on('message', async (msg) => {
  try {
    if (msg.type === 'go') {
      await adapter.startWorker({ concurrency, onJob, flow, pooled });
      ticker = setInterval(report, 5);
      send({ type: 'ready' });
    } else if (msg.type === 'stop') {
      clearInterval(ticker);
      // Sampled before shutdown, which is not part of the worker's steady state.
      const maxRssKb = process.resourceUsage().maxRSS;
      await adapter.close();
      // Disconnect only once the result is handed over: at --scale=5 the counts (200 KB) were still
      // queued when the channel closed, and the orchestrator saw the worker exit without a result.
      await new Promise((resolve) =>
        process.send({ type: 'result', counts, done, outside, maxRssKb, starts, ends }, resolve),
      );
      process.disconnect();
    }
  } catch (e) {
    send({ type: 'error', message: e?.stack ?? String(e) });
    process.exitCode = 1;
    process.disconnect();
  }
});

process.on('disconnect', () => setTimeout(() => process.exit(), 2000).unref());
