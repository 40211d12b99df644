// Starting worker processes and waiting on what they report.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ms, now, sleep } from './common.mjs';

const WORKER = fileURLToPath(new URL('./worker.mjs', import.meta.url));

class Child {
  constructor(lib, concurrency, size, mode, handlerMs, flow, pooled) {
    const args = [
      lib,
      String(concurrency),
      String(size),
      mode,
      String(handlerMs),
      flow ?? '',
      pooled ? JSON.stringify(pooled) : '',
    ];
    // Same Node binary as the orchestrator: every library runs on the one Node 22.
    this.proc = fork(WORKER, args, {
      execPath: process.execPath,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.done = 0;
    this.first = null;
    this.starts = [];
    this.waiters = new Map();
    this.failure = null;
    this.proc.on('message', (m) => this.onMessage(m));
    this.proc.on('exit', (code, signal) => {
      if (!this.result) this.fail(new Error(`worker exited (${signal ?? code}) before reporting`));
    });
  }

  onMessage(m) {
    if (m.type === 'first') this.first = m.t;
    else if (m.type === 'progress') this.done = m.done;
    else if (m.type === 'start') this.starts.push(m);
    else if (m.type === 'error') return this.fail(new Error(`worker: ${m.message}`));
    else if (m.type === 'result') this.result = m;
    this.onChange?.();
    const w = this.waiters.get(m.type);
    if (w) {
      this.waiters.delete(m.type);
      w.resolve(m);
    }
  }

  fail(err) {
    this.failure ??= err;
    this.onChange?.();
    for (const w of this.waiters.values()) w.reject(err);
    this.waiters.clear();
  }

  wait(type, timeoutMs) {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(type);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for "${type}" from the worker`));
      }, timeoutMs);
      this.waiters.set(type, {
        resolve: (m) => (clearTimeout(timer), resolve(m)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
    });
  }

  send(msg) {
    if (this.proc.connected) this.proc.send(msg);
  }

  async stop(timeoutMs = 30_000) {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
      if (this.result) return this.result;
      throw this.failure ?? new Error('worker gone');
    }
    const result = this.wait('result', timeoutMs);
    this.send({ type: 'stop' });
    try {
      return await result;
    } finally {
      await this.exited(5_000);
    }
  }

  async exited(timeoutMs) {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const gone = new Promise((r) => this.proc.once('exit', r));
    if ((await Promise.race([gone, sleep(timeoutMs).then(() => 'late')])) === 'late') {
      this.proc.kill('SIGKILL');
      await gone;
    }
  }

  kill() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
  }
}

// Starts `count` worker processes and lets them consume together once all of
// them have loaded their library. `pooled`: { url, listen } to connect them through a transaction pooler.
export async function startWorkers({ lib, count = 1, concurrency, size, mode = 'drain', handlerMs = 0, flow, pooled }) {
  const children = Array.from(
    { length: count },
    () => new Child(lib, concurrency, size, mode, handlerMs, flow, pooled),
  );
  try {
    await Promise.all(children.map((c) => c.wait('loaded', 60_000)));
    const ready = children.map((c) => c.wait('ready', 60_000));
    for (const c of children) c.send({ type: 'go' });
    await Promise.all(ready);
    return children;
  } catch (e) {
    children.forEach((c) => c.kill());
    throw e;
  }
}

// Waits until the handlers have run `total` jobs and the library's storage
// shows none left unfinished (completions may be buffered past the handler),
// then stops the workers. Throughput runs from the first handler start.
export async function drain({ adapter, children, total, timeoutMs }) {
  const deadline = Date.now() + timeoutMs;
  const check = () => {
    const f = children.find((c) => c.failure);
    if (f) throw f.failure;
    if (Date.now() > deadline) throw new Error(`drain not finished after ${timeoutMs} ms`);
  };
  // Woken by the workers' messages rather than a tight timer, so the
  // orchestrator takes no CPU from the two cores while the workers run.
  let wake = () => {};
  for (const c of children) c.onChange = () => wake();
  try {
    while (children.reduce((a, c) => a + c.done, 0) < total) {
      check();
      await new Promise((r) => {
        wake = r;
        setTimeout(r, 250);
      });
    }
    let end;
    for (;;) {
      check();
      const pending = await adapter.pendingCount();
      end = now();
      if (pending === 0) break;
      await sleep(2);
    }
    const start = children
      .map((c) => c.first)
      .filter((t) => t !== null)
      .reduce((a, b) => (b < a ? b : a));
    const results = [];
    for (const c of children) results.push(await c.stop());
    return { seconds: ms(start, end) / 1000, results };
  } finally {
    children.forEach((c) => c.kill());
  }
}

// Merges per-process run counts: every job id must have run exactly once.
export function exactlyOnce(results, size) {
  let missing = 0;
  let duplicated = 0;
  for (let i = 0; i < size; i++) {
    let n = 0;
    for (const r of results) n += r.counts[i];
    if (n === 1) continue;
    if (n > 1) duplicated++;
    else missing++; // 0, or NaN if a count never arrived: never a silent pass
  }
  const outside = results.reduce((a, r) => a + r.outside, 0);
  return { ok: missing === 0 && duplicated === 0 && outside === 0, missing, duplicated, outside };
}

// The most handlers running at once, over all jobs and within any one key (job i's key is
// i % keys), from the handlers' own start and end times in every process. An end and a start at
// the same instant count as one after the other.
export function mostRunning(results, size, keys = 1) {
  const events = [];
  for (const r of results) {
    for (let i = 0; i < size; i++) {
      if (r.starts[i] === 0) continue;
      events.push([r.starts[i], 1, i % keys], [r.ends[i] || r.starts[i], -1, i % keys]);
    }
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const perKey = new Int32Array(keys);
  let running = 0;
  let most = 0;
  let mostPerKey = 0;
  for (const [, d, k] of events) {
    running += d;
    perKey[k] += d;
    if (running > most) most = running;
    if (perKey[k] > mostPerKey) mostPerKey = perKey[k];
  }
  return { most, mostPerKey };
}
