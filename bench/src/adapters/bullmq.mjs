// BullMQ on Redis with its defaults apart from concurrency: completed jobs are
// kept (removeOnComplete unset), as the PostgreSQL libraries keep theirs.
import { FlowProducer, Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { REDIS_URL, sleep } from '../common.mjs';

const PREFIX = 'djbench'; // a key prefix of our own, so cleanup never touches other keys
const QUEUE = 'noop';

export const settings = (c) => ({ concurrency: c });

function connection() {
  const u = new URL(REDIS_URL);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    db: Number(u.pathname.slice(1) || 0),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
  };
}

// Writes completed jobs straight into the keys BullMQ's own moveToFinished
// leaves: the job hash and its entry in the completed sorted set.
const PREFILL = `
local base, from, to, ts = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
for i = from, to do
  local id = 'f' .. i
  redis.call('HSET', base .. id, 'name', 'noop', 'data', '{"i":-' .. i .. '}', 'opts', '{"attempts":0}',
    'timestamp', ts, 'processedOn', ts, 'finishedOn', ts, 'returnvalue', 'null', 'atm', '1', 'ats', '1')
  redis.call('ZADD', base .. 'completed', ts, id)
end
return to - from + 1`;

export function create() {
  let queue = null;
  let worker = null;
  let redis = null;
  let events = null;
  let flows = null;

  const q = () => (queue ??= new Queue(QUEUE, { connection: connection(), prefix: PREFIX }));
  // The waitfor scenario's one QueueEvents of the process (a Redis stream reader), shared by every waiter.
  const qe = () => (events ??= new QueueEvents(QUEUE, { connection: connection(), prefix: PREFIX }));
  const r = () => (redis ??= new Redis(connection()));
  // The invoke scenarios' flows: BullMQ's parent/child jobs.
  const fp = () => (flows ??= new FlowProducer({ connection: connection(), prefix: PREFIX }));
  const flow = (i, child) => ({
    name: QUEUE,
    queueName: QUEUE,
    data: { i, invoke: child },
    children: [{ name: QUEUE, queueName: QUEUE, data: { i: child, child: true } }],
  });

  return {
    name: 'bullmq',
    label: 'BullMQ 6 (Redis)',
    storage: 'redis',

    async open() {
      await q().waitUntilReady();
    },

    async reset() {
      await this.cleanup();
      await q().waitUntilReady();
    },

    // SCAN + UNLINK by our prefix: obliterate() would work too but walks the
    // queue job by job, which takes long with a million kept jobs.
    async cleanup() {
      await this.close();
      const c = r();
      let cursor = '0';
      do {
        const [next, keys] = await c.scan(cursor, 'MATCH', `${PREFIX}:*`, 'COUNT', 5000);
        cursor = next;
        if (keys.length) await c.unlink(...keys);
      } while (cursor !== '0');
    },

    async enqueueBulk(n, offset = 0) {
      const jobs = new Array(n);
      for (let k = 0; k < n; k++) jobs[k] = { name: QUEUE, data: { i: offset + k } };
      await q().addBulk(jobs);
    },

    // A queue limited to 10: the global concurrency, held in Redis across every worker.
    flow: ['limit'],
    async enqueueFlow(n) {
      await q().setGlobalConcurrency(10);
      await this.enqueueBulk(n);
    },

    async enqueueOne(i) {
      await q().add(QUEUE, { i });
    },

    // Simple-mode deduplication (no ttl): a key is held until its job completes or fails.
    async enqueueUnique(i, key) {
      await q().add(QUEUE, { i }, { deduplication: { id: key } });
    },

    // The waitfor scenario: job.waitUntilFinished(queueEvents) is BullMQ's wait for a job's end.
    // The handler waits holdMs before it ends, as ours does.
    endWaits: true,
    async enqueueHeld(i, holdMs) {
      await qe().waitUntilReady();
      return q().add(QUEUE, { i, holdMs });
    },

    // Resolves once the job ended: true when it completed (waitUntilFinished rejects when it failed).
    async waitForEnd(job, timeoutMs) {
      await job.waitUntilFinished(qe(), timeoutMs);
      return true;
    },

    // The invoke scenarios, BullMQ's nearest shape: a flow (FlowProducer) of a parent with one child.
    // The child runs first, then the parent, once (no replay), reading its child's result with
    // job.getChildrenValues(). Not ctx.invoke's shape: the parent does not start before its child.
    invokes: true,
    async enqueueInvokers(n, childOffset, offset = 0) {
      const all = new Array(n);
      for (let k = 0; k < n; k++) all[k] = flow(offset + k, childOffset + k);
      await fp().addBulk(all);
    },

    async enqueueInvoker(i, child) {
      await fp().add(flow(i, child));
    },

    // Every parent completed with its own child's result, and each has exactly one child, completed.
    async checkInvoked(n) {
      const jobs = await q().getJobs(['completed', 'failed', 'wait', 'active', 'delayed', 'waiting-children']);
      const parents = jobs.filter((j) => j.data.invoke !== undefined);
      const children = jobs.filter((j) => j.data.child === true);
      const perParent = new Map();
      for (const c of children) {
        const key = c.parentKey ?? c.opts?.parent?.id;
        perParent.set(key, (perParent.get(key) ?? 0) + 1);
      }
      const r = {
        parents: parents.length,
        succeeded: parents.filter((p) => p.finishedOn && !p.failedReason).length,
        one_child: parents.filter((p) => perParent.get(`${PREFIX}:${QUEUE}:${p.id}`) === 1).length,
        with_result: parents.filter((p) => p.returnvalue?.child === p.data.invoke).length,
        children: children.filter((c) => c.finishedOn && !c.failedReason && c.attemptsMade <= 1).length,
      };
      if (r.parents !== n || r.succeeded !== n || r.one_child !== n || r.with_result !== n || r.children !== n) {
        throw new Error(`invoke: ${JSON.stringify(r)}; ${n} parents expected, each completed with one child's result`);
      }
      return r;
    },

    async jobCount() {
      const counts = await q().getJobCounts();
      return Object.values(counts).reduce((a, b) => a + b, 0);
    },

    async prefillFinished(n) {
      const c = r();
      const base = `${PREFIX}:${QUEUE}:`;
      const ts = String(Date.now());
      // Chunks keep each script short so Redis never blocks for seconds at a time.
      for (let from = 1; from <= n; from += 50_000) {
        await c.eval(PREFILL, 1, base, from, Math.min(n, from + 49_999), ts);
      }
    },

    async analyze() {},

    async pendingCount() {
      // waiting-children: a flow's parent (the invoke scenarios) waits there for its child.
      const counts = await q().getJobCounts('wait', 'active', 'delayed', 'prioritized', 'paused', 'waiting-children');
      return Object.values(counts).reduce((a, b) => a + b, 0);
    },

    async startWorker({ concurrency, onJob }) {
      worker = new Worker(
        QUEUE,
        async (job) => {
          if (job.data.holdMs) await sleep(job.data.holdMs);
          // A flow's parent (the invoke scenarios): its one child's result, checked as ours checks
          // what ctx.invoke() returned.
          if (job.data.invoke !== undefined) {
            const values = Object.values(await job.getChildrenValues());
            const got = values.length === 1 ? values[0] : null;
            await onJob(got?.child === job.data.invoke ? job.data : { i: -3 });
            return { child: got?.child ?? null };
          }
          if (job.data.child) {
            await onJob(job.data);
            return { child: job.data.i };
          }
          return onJob(job.data);
        },
        {
          connection: connection(),
          prefix: PREFIX,
          concurrency,
        },
      );
      worker.on('error', (e) => console.error(`[bullmq] ${e.message}`));
      await worker.waitUntilReady();
    },

    async close() {
      if (worker) await worker.close();
      if (events) await events.close();
      if (flows) await flows.close();
      if (queue) await queue.close();
      if (redis) await redis.quit();
      worker = queue = redis = events = flows = null;
    },
  };
}
